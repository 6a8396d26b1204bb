package main

import (
	"context"
	"errors"

	"github.com/agentbox/agentbox/agent"
	"github.com/agentbox/agentbox/sandbox"
)

// statusExitCode is the one mapping from a session's status (agent.Status*)
// to DESIGN.md's exit codes. A command that ran and failed (exec) passes
// its own code through instead.
func statusExitCode(status string) int {
	switch status {
	case agent.StatusOK:
		return exitOK
	case agent.StatusStepLimit, agent.StatusTimeout:
		return exitLimit
	case agent.StatusInterrupted:
		return exitInterrupted
	case agent.StatusDenied:
		return exitDenied
	case agent.StatusTimedOut:
		return exitTimeout
	}
	return exitFailed
}

// errorExitCode maps package errors to DESIGN.md's exit codes: the errors
// that end a session with a status through statusExitCode, the sandbox's
// and the configuration's own classes directly.
func errorExitCode(err error) int {
	switch {
	case errors.Is(err, agent.ErrStepLimit):
		return statusExitCode(agent.StatusStepLimit)
	case errors.Is(err, agent.ErrSessionTimeout):
		return statusExitCode(agent.StatusTimeout)
	case errors.Is(err, context.Canceled), errors.Is(err, sandbox.ErrClosed):
		return statusExitCode(agent.StatusInterrupted)
	case errors.Is(err, sandbox.ErrConfig):
		return exitUsage
	case errors.Is(err, sandbox.ErrUnavailable), errors.Is(err, sandbox.ErrImageMissing), errors.Is(err, sandbox.ErrExecutor):
		return exitUnavailable
	}
	return statusExitCode(agent.StatusError)
}
