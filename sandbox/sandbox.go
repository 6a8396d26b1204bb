// Package sandbox provides disposable, hardened sandboxes in which every
// action of an agent runs: a Runtime starts a Session (one container), and a
// Session executes bash commands and reads and writes files inside it.
//
// This package holds only the seams (Runtime, Session), the configuration,
// the typed modes and the errors; it imports no engine SDK. Backends live
// in sub-packages (sandbox/docker) and reach the in-container executor
// through the transport-neutral protocol client in sandbox/wire.
package sandbox

import (
	"context"
	"io"
	"time"
)

// Runtime starts sandbox sessions.
type Runtime interface {
	Start(ctx context.Context, cfg Config) (Session, error)
}

// Session is one running sandbox. It is not safe for concurrent use by
// several goroutines unless the implementation says so.
type Session interface {
	// ID is the session id (also the container label agentbox.session).
	ID() string
	// Info describes the container for the audit log.
	Info() Info
	Exec(ctx context.Context, req ExecRequest) (ExecResult, error)
	ReadFile(ctx context.Context, req ReadRequest) (ReadResult, error)
	WriteFile(ctx context.Context, req WriteRequest) (WriteResult, error)
	// Close stops and removes the sandbox. It is safe to call more than once.
	Close(ctx context.Context) error
}

// FileRules are the glob rules the executor checks against the path a file
// request resolves to inside the sandbox (relative to /workspace). A nil
// *FileRules means no in-sandbox check.
type FileRules struct {
	Allow []string `json:"allow"`
	Deny  []string `json:"deny"`
}

// Config is everything needed to start one session.
type Config struct {
	Image          string
	Runtime        string        // OCI runtime ("" = engine default, "runsc" for gVisor)
	Workspace      string        // absolute host directory mounted at /workspace
	WorkspaceMode  WorkspaceMode // WorkspaceRW or WorkspaceRO ("" = rw); a copy is mounted rw
	Network        NetworkMode   // NetworkNone, NetworkProxy or NetworkOpen ("" = none)
	Egress         Egress        // serves NetworkProxy connections; required for it
	User           string        // "uid:gid"; "" = the invoking user's
	CPUs           float64
	MemoryBytes    int64
	Pids           int64
	Env            map[string]string // passed into the sandbox, nothing else is
	GitIdentity    string            // who commits in the sandbox (set in Env), as the start header says it
	KeepBackground bool              // processes left behind after a call survive
	OutputCap      int               // bytes of output kept per call (head + tail)
	ExecutorPath   string            // static agentbox binary to mount; "" = os.Executable
	SessionID      string            // "" = a new random id (see NewID)
	Enforce        Enforcement       // exec-time rules, effects check, dead man's switch

	// ReadDeny and WriteDeny are the policy's files.read.deny and
	// files.write.deny globs (relative to /workspace). At start, every
	// existing workspace path ReadDeny matches is hidden by the kernel (an
	// empty read-only file or directory mounted over it) and every one
	// WriteDeny matches is mounted read-only; too many matches refuse.
	ReadDeny  []string
	WriteDeny []string
	// SessionTimeout is how long the session may last (0 = not said); gc
	// removes a sandbox whose owner it cannot prove dead only once it is
	// far older than this.
	SessionTimeout time.Duration
	Overlay        *Overlay // non-nil: /workspace is an overlay with Workspace as its read-only lower layer

	// ProxyOverChannel carries NetworkProxy connections over the executor's
	// channel (package wire's proxy streams) instead of a unix socket
	// mounted into the sandbox. Backends that cannot mount a host socket
	// always do; for Docker it is an option (the socket is the default).
	ProxyOverChannel bool
	// TrustPEM is a CA certificate (PEM) the sandbox trusts besides its
	// image's roots: the proxy's session CA when it intercepts TLS. The
	// backend mounts the combined bundle read-only at CABundlePath; the
	// caller sets TrustEnv in Env. Only with NetworkProxy.
	TrustPEM []byte

	// WorkspaceCopy: Workspace is a session's copy of the user's directory
	// (workspace.Copy), not the directory itself. A backend that carries
	// the workspace into the sandbox and the changes back (Kubernetes)
	// refuses rw on anything else.
	WorkspaceCopy bool
	// DiskBytes bounds what the sandbox's workspace may hold where the
	// backend bounds it (Kubernetes: sandbox.limits.disk); 0 = the default.
	DiskBytes int64
}

// Puller is a Session whose workspace lives inside the sandbox (the
// Kubernetes backend): Pull brings what changed since the last pull back
// into Config.Workspace on the host, dropping (and reporting) changes to
// paths the file rules deny. Close pulls too, before the sandbox goes.
type Puller interface {
	Pull(ctx context.Context) (PullReport, error)
}

// PullReport is what one Pull brought back.
type PullReport struct {
	Entries int
	Bytes   int64
	Alarms  []Alarm // changes dropped (action "dropped") or altered ("cleared")
}

// Overlay is a copy-on-write view of the workspace: Workspace is the
// read-only lower layer, Upper receives every write (the exact change set),
// Work is overlay's scratch directory on Upper's filesystem.
type Overlay struct {
	Upper string
	Work  string
	// Lower, when set, is the path the engine mounts as the lower layer
	// instead of Workspace: a link to it under a name that overlay's
	// mount options can carry (the workspace's own path holds , : \ or =,
	// which would split or alias the options). "" = Workspace.
	Lower string
	// Staged: trusted host code decides and promotes what the upper
	// layer holds after every call (package workspace, Stage). The
	// files.write rules are then enforced there, on the host: no
	// read-only mounts for files.write.deny (so git add/commit work on
	// .git's objects and refs) and no effects walk in the sandbox.
	Staged bool
}

// Info describes a started session.
type Info struct {
	SessionID   string `json:"session"`
	ContainerID string `json:"container_id"`
	Image       string `json:"image"`
	ImageID     string `json:"image_id"`
	Runtime     string `json:"runtime,omitempty"`
	User        string `json:"user"`
	Masked      int    `json:"masked,omitempty"` // workspace paths the file rules protect by mounts
	// Start says how a backend with a warm pool had the sandbox when the
	// session asked its pool: StartWarm or StartCold; "" when no pool was
	// asked (Docker; Kubernetes without --pool).
	Start string `json:"start,omitempty"`
}

// Info.Start values.
const (
	StartWarm = "warm" // an idle pool sandbox was claimed
	StartCold = "cold" // the pool had none (or its pod failed): a new one
)

// ExecRequest runs one bash command in /workspace.
type ExecRequest struct {
	Command string
	Timeout time.Duration
	// Stdout and Stderr, when either is set, receive the command's output
	// as it is written, the two streams apart and whole (the cap applies
	// only to ExecResult.Output). A slow writer slows the command down;
	// nothing is buffered beyond one chunk. A writer that fails gets no
	// more output; the command runs on.
	Stdout, Stderr io.Writer
	// Expect are the programs the up-front analysis of Command predicted
	// (policy.Decision.Programs); one that runs and is not among them is
	// reported as an "unexpected_exec" alarm. Nil: no such check.
	Expect []string
}

// ExecResult is the outcome of one command. Output is stdout and stderr
// interleaved as the command wrote them (when streamed apart, in the order
// they were read), capped (head + marker + tail); OutputBytes and
// OutputSHA cover the whole combined output.
type ExecResult struct {
	ExitCode int  `json:"exit_code"`
	TimedOut bool `json:"timed_out"`
	// Interrupted: the caller's context ended during the call; the
	// command and every process it started were killed, the sandbox kept.
	Interrupted bool          `json:"interrupted,omitempty"`
	OOMKilled   bool          `json:"oom_killed,omitempty"`
	Duration    time.Duration `json:"-"`
	DurationMS  int64         `json:"duration_ms"`
	Output      []byte        `json:"-"`
	OutputBytes int64         `json:"output_bytes"`
	OutputSHA   string        `json:"output_sha256"`
	Truncated   bool          `json:"truncated"`
	// What the executor saw: programs run (capped), execs it stopped,
	// forbidden effects it undid.
	Programs        []ProgramCount `json:"programs,omitempty"`
	ProgramsDropped int            `json:"programs_dropped,omitempty"`
	DeniedExecs     []DeniedExec   `json:"denied_execs,omitempty"`
	Alarms          []Alarm        `json:"alarms,omitempty"`
}

// ReadRequest reads a regular file below /workspace.
type ReadRequest struct {
	Path   string
	Offset int64
	Limit  int64
	Rules  *FileRules
}

// ReadResult is the content read.
type ReadResult struct {
	Content  []byte
	Size     int64  // total size of the file
	Resolved string // path the request resolved to, relative to /workspace
	SHA256   string // of Content
}

// WriteRequest writes a whole file atomically below /workspace.
type WriteRequest struct {
	Path    string
	Content []byte
	Rules   *FileRules
}

// WriteResult describes the file written.
type WriteResult struct {
	Resolved string
	Bytes    int64
	SHA256   string
}
