package sandbox

import "fmt"

// Capabilities are what a backend can do, declared by the backend itself
// (Nomad-style). The session and the CLI decide by them, never by a
// backend's name: a new backend that declares the same capabilities gets
// the same behaviour.
type Capabilities struct {
	// Backend names the backend in messages only ("docker",
	// "kubernetes"); nothing branches on it.
	Backend string
	// HostMounts: the sandbox mounts host directories, so it can work on
	// the user's workspace in place (rw, ro). Without it the workspace is
	// carried into the sandbox as a copy and its changes come back for
	// review (rw becomes copy).
	HostMounts bool
	// FileMasks: files.read.deny paths are masked and files.write.deny
	// paths mounted read-only by the kernel inside the sandbox. Without
	// it the rules are applied to the copy on its way in and out.
	FileMasks bool
	// OverlayStaging: the backend mounts an overlay whose upper layer
	// stages the sandbox's writes (a copy-mode session needs no real
	// copy). Without it a copy is a real copy.
	OverlayStaging bool
	// ProxySocket and ProxyChannel: network: proxy connections reach the
	// host-side proxy over a unix socket mounted into the sandbox, or over
	// the executor's channel.
	ProxySocket, ProxyChannel bool
	// RuntimeClasses: sandbox.runtime names a class the cluster maps to a
	// runtime (a Kubernetes RuntimeClass) rather than an OCI runtime the
	// engine has registered.
	RuntimeClasses bool
	// HostUser: the sandbox runs as the invoking user's uid:gid (as uid 0
	// with every capability dropped when root owns the workspace). Without
	// it the backend picks a non-root uid itself.
	HostUser bool
	// CopyOverChannel: a copy travels into the sandbox over the executor's
	// channel, so it is always a real copy, never an overlay.
	CopyOverChannel bool
	// DiskBound says where the backend bounds what a copy-mode session
	// writes, when it does so itself ("" = on the host, by the copy).
	DiskBound string
}

// Capable is a Runtime that declares its capabilities; every real backend
// does.
type Capable interface {
	Capabilities() Capabilities
}

// CapabilitiesOf is what rt declares, or, for a runtime that declares
// nothing (a test fake), a sandbox that mounts host paths and nothing more.
func CapabilitiesOf(rt Runtime) Capabilities {
	if c, ok := rt.(Capable); ok {
		return c.Capabilities()
	}
	return Capabilities{Backend: "unnamed", HostMounts: true, HostUser: true}
}

// Mode is the workspace mode a session runs in when want is asked for:
// a backend without host mounts works on a copy where rw was asked for.
// explicit says that the user asked for want by name (a flag), which such a
// backend refuses instead of changing it.
func (c Capabilities) Mode(want WorkspaceMode, explicit bool) (WorkspaceMode, error) {
	if want == "" {
		want = WorkspaceRW
	}
	if want == WorkspaceRW && !c.HostMounts {
		if explicit {
			return "", errNoHostMounts(c)
		}
		return WorkspaceCopy, nil
	}
	return want, nil
}

// errNoHostMounts refuses rw (asked for by name) on a backend that cannot
// mount the user's workspace.
func errNoHostMounts(c Capabilities) error {
	return fmt.Errorf("%w: the %s backend never mounts the host's workspace, so it cannot work on it in place (rw); use the copy workspace mode: the sandbox works on a copy and its changes come back for review via `agentbox changes` / `agentbox apply`", ErrConfig, c.Backend)
}
