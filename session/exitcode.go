package session

import (
	"context"
	"errors"

	"github.com/agentbox/agentbox/agent"
	"github.com/agentbox/agentbox/sandbox"
)

// Exit codes (docs/DESIGN.md, "Exit codes").
const (
	ExitOK          = 0   // success; exec passes the command's own code through
	ExitFailed      = 1   // the task or a check failed
	ExitUsage       = 2   // usage or configuration error: nothing was started
	ExitLimit       = 3   // a limit stopped the run (steps, session timeout)
	ExitTimeout     = 124 // exec: the command timed out
	ExitUnavailable = 125 // the sandbox could not be provided
	ExitDenied      = 126 // exec: the policy denied the command
	ExitInterrupted = 130 // SIGINT/SIGTERM
)

// StatusExitCode is the one mapping from a session's status (agent.Status*,
// as session_end records it) to an exit code.
func StatusExitCode(status string) int {
	switch status {
	case agent.StatusOK:
		return ExitOK
	case agent.StatusStepLimit, agent.StatusTimeout:
		return ExitLimit
	case agent.StatusInterrupted:
		return ExitInterrupted
	case agent.StatusDenied:
		return ExitDenied
	case agent.StatusTimedOut:
		return ExitTimeout
	}
	return ExitFailed
}

// ErrorExitCode maps the error that ended a session (or kept it from
// starting) to an exit code: the errors that end a session with a status
// through StatusExitCode, the sandbox's and the configuration's own
// classes directly.
func ErrorExitCode(err error) int {
	switch {
	case errors.Is(err, agent.ErrStepLimit):
		return StatusExitCode(agent.StatusStepLimit)
	case errors.Is(err, agent.ErrSessionTimeout):
		return StatusExitCode(agent.StatusTimeout)
	case errors.Is(err, context.Canceled), errors.Is(err, sandbox.ErrClosed):
		return StatusExitCode(agent.StatusInterrupted)
	case errors.Is(err, sandbox.ErrConfig):
		return ExitUsage
	case errors.Is(err, sandbox.ErrUnavailable), errors.Is(err, sandbox.ErrImageMissing), errors.Is(err, sandbox.ErrExecutor):
		return ExitUnavailable
	}
	return StatusExitCode(agent.StatusError)
}

// ExitCode is the exit code of a session that ended with status and err
// (nil when it ended as its status says): a status that is a success or a
// limit decides; otherwise the error's class, else the status.
func ExitCode(status string, err error) int {
	switch status {
	case agent.StatusOK, agent.StatusStepLimit, agent.StatusTimeout:
		return StatusExitCode(status)
	}
	if err != nil {
		return ErrorExitCode(err)
	}
	return StatusExitCode(status)
}
