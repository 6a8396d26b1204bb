package docker

import "github.com/agentbox/agentbox/sandbox"

// Caps is what the Docker backend can do (Podman's compatible API
// included): it mounts host paths, masks files with kernel mounts, has the
// engine mount overlays, carries the proxy over a mounted socket or the
// channel, and runs as the invoking user.
func Caps() sandbox.Capabilities {
	return sandbox.Capabilities{
		Backend: "docker", Workspace: sandbox.WorkspaceOverlay, Files: sandbox.FilesMasked,
		Proxy: sandbox.ProxyOverSocket, Runtime: sandbox.RuntimeOCI, User: sandbox.UserHost,
	}
}

// Capabilities implements sandbox.Capable.
func (d *Runtime) Capabilities() sandbox.Capabilities { return Caps() }

var _ sandbox.Capable = (*Runtime)(nil)
