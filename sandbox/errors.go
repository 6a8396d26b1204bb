package sandbox

import "errors"

// Sentinel errors; callers test with errors.Is and map them to exit codes.
var (
	// ErrUnavailable: the engine cannot be reached or refused to run the
	// sandbox.
	ErrUnavailable = errors.New("sandbox unavailable")
	// ErrImageMissing: the sandbox image is not present locally.
	ErrImageMissing = errors.New("sandbox image missing")
	// ErrExecutor: the in-container executor died, stopped answering, or
	// sent something that is not a valid answer. The container was killed.
	ErrExecutor = errors.New("sandbox executor failed")
	// ErrConfig: the session configuration is invalid (workspace, limits).
	ErrConfig = errors.New("invalid sandbox configuration")
	// ErrDenied: the executor refused a file request because the path it
	// resolves to is denied by the policy.
	ErrDenied = errors.New("denied by policy")
	// ErrClosed: the session was closed.
	ErrClosed = errors.New("sandbox session closed")
	// ErrPull: a sandbox whose workspace lives inside it (Kubernetes) could
	// not bring all its changes back; the change list is incomplete.
	ErrPull = errors.New("the sandbox's changes could not all be brought back")
)

// FileError is a file request the executor refused (missing file, not a
// regular file, outside the workspace, a denied resolved path). It is the
// model's problem to handle, not a sandbox failure.
type FileError struct {
	Msg      string
	Resolved string
	Rule     string
	Denied   bool
}

func (e *FileError) Error() string { return e.Msg }

// Is makes a denied FileError match ErrDenied.
func (e *FileError) Is(target error) bool { return e.Denied && target == ErrDenied }
