package kubernetes

import "github.com/agentbox/agentbox/sandbox"

// Caps is what the Kubernetes backend can do: no host path is mounted (the
// workspace travels into the pod as a real copy over the executor's
// channel and its changes come back), file rules apply to the copy on its
// way in and out, the proxy runs over the channel, sandbox.runtime names a
// RuntimeClass, and the pod bounds the copy's writes itself.
func Caps() sandbox.Capabilities {
	return sandbox.Capabilities{
		Backend: "kubernetes", Workspace: sandbox.WorkspaceChannel, Files: sandbox.FilesOnCopy,
		Proxy: sandbox.ProxyOverChannel, Runtime: sandbox.RuntimeClasses, User: sandbox.UserBackend,
		DiskBound: "bounded in the pod: the workspace emptyDir's sizeLimit and the executor's own count",
	}
}

// Capabilities implements sandbox.Capable.
func (r *Runtime) Capabilities() sandbox.Capabilities { return Caps() }

var _ sandbox.Capable = (*Runtime)(nil)
