package main

import (
	"errors"

	"github.com/agentbox/agentbox/agent"
	"github.com/agentbox/agentbox/sandbox"
)

// sandboxExitCode maps package errors to DESIGN.md's exit codes.
func sandboxExitCode(err error) int {
	switch {
	case errors.Is(err, agent.ErrStepLimit), errors.Is(err, agent.ErrSessionTimeout):
		return exitLimit
	case errors.Is(err, sandbox.ErrConfig):
		return exitUsage
	case errors.Is(err, sandbox.ErrUnavailable), errors.Is(err, sandbox.ErrImageMissing), errors.Is(err, sandbox.ErrExecutor):
		return exitUnavailable
	}
	return exitFailed
}
