package sandbox

import "fmt"

// Capabilities are what a backend can do, declared by the backend itself
// (Nomad-style) as one enum per capability, each with its readers. The
// session and the CLI decide by them, never by a backend's name: a new
// backend that declares the same capabilities gets the same behaviour.
type Capabilities struct {
	// Backend names the backend in messages only ("docker",
	// "kubernetes"); nothing branches on it.
	Backend string
	// Workspace is how the user's workspace reaches the sandbox.
	Workspace WorkspaceCap
	// Files is where the policy's file rules are enforced.
	Files FilesCap
	// Proxy is how network: proxy connections reach the host-side proxy.
	Proxy ProxyCap
	// Runtime is what sandbox.runtime names.
	Runtime RuntimeCap
	// User is whose uid the sandbox runs as.
	User UserCap
	// DiskBound says where the backend bounds what a copy-mode session
	// writes, when it does so itself ("" = on the host, by the copy).
	DiskBound string
}

// WorkspaceCap is how the workspace reaches the sandbox.
type WorkspaceCap uint8

const (
	// WorkspaceMount: the sandbox mounts host directories, so it works on
	// the user's workspace in place (rw, ro) or on a real copy on the host.
	WorkspaceMount WorkspaceCap = iota
	// WorkspaceOverlay: as WorkspaceMount, and the backend mounts an
	// overlay whose upper layer stages the sandbox's writes (rw is staged;
	// a copy-mode session needs no real copy).
	WorkspaceOverlay
	// WorkspaceChannel: no host directory is mounted; the workspace is a
	// real copy carried into the sandbox over the executor's channel and
	// its changes come back the same way (rw becomes copy).
	WorkspaceChannel
)

func (w WorkspaceCap) String() string {
	return [...]string{"mount", "overlay", "channel", "unknown"}[min(int(w), 3)]
}

// Mounts reports whether the sandbox mounts host directories (the
// workspace in place, a copy on the host).
func (w WorkspaceCap) Mounts() bool { return w == WorkspaceMount || w == WorkspaceOverlay }

// Overlays reports whether the backend mounts an overlay that stages the
// sandbox's writes.
func (w WorkspaceCap) Overlays() bool { return w == WorkspaceOverlay }

// Channel reports whether the workspace travels over the executor's
// channel as a real copy.
func (w WorkspaceCap) Channel() bool { return w == WorkspaceChannel }

// FilesCap is where the file rules are enforced.
type FilesCap uint8

const (
	// FilesOnCopy: the rules are applied to the copy on its way in and out.
	FilesOnCopy FilesCap = iota
	// FilesMasked: files.read.deny paths are masked and files.write.deny
	// paths mounted read-only by the kernel inside the sandbox.
	FilesMasked
)

// Masked reports whether the kernel masks files inside the sandbox.
func (f FilesCap) Masked() bool { return f == FilesMasked }

// ProxyCap is how network: proxy connections reach the host-side proxy.
type ProxyCap uint8

const (
	// ProxyOverChannel: over the executor's channel only.
	ProxyOverChannel ProxyCap = iota
	// ProxyOverSocket: over a unix socket mounted into the sandbox (the
	// channel works too).
	ProxyOverSocket
)

// Socket reports whether the proxy's socket can be mounted.
func (p ProxyCap) Socket() bool { return p == ProxyOverSocket }

// RuntimeCap is what sandbox.runtime names.
type RuntimeCap uint8

const (
	// RuntimeOCI: an OCI runtime the engine has registered (runc, runsc).
	RuntimeOCI RuntimeCap = iota
	// RuntimeClasses: a class the cluster maps to a runtime (a Kubernetes
	// RuntimeClass).
	RuntimeClasses
)

// Classes reports whether sandbox.runtime names a runtime class.
func (r RuntimeCap) Classes() bool { return r == RuntimeClasses }

// UserCap is whose uid the sandbox runs as.
type UserCap uint8

const (
	// UserBackend: the backend picks a non-root uid itself.
	UserBackend UserCap = iota
	// UserHost: the invoking user's uid:gid (as uid 0 with every
	// capability dropped when root owns the workspace).
	UserHost
)

// Host reports whether the sandbox runs as the invoking user.
func (u UserCap) Host() bool { return u == UserHost }

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
	return Capabilities{Backend: "unnamed", Workspace: WorkspaceMount, User: UserHost}
}

// Mode is the workspace mode a session runs in when want is asked for:
// a backend without host mounts works on a copy where rw was asked for.
// explicit says that the user asked for want by name (a flag), which such a
// backend refuses instead of changing it.
func (c Capabilities) Mode(want WorkspaceMode, explicit bool) (WorkspaceMode, error) {
	if want == "" {
		want = WorkspaceRW
	}
	if want == WorkspaceRW && !c.Workspace.Mounts() {
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
