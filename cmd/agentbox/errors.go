package main

import (
	"context"
	"errors"

	"github.com/agentbox/agentbox/agent"
	"github.com/agentbox/agentbox/sandbox"
)

// errorExitCode maps package errors to DESIGN.md's exit codes.
func errorExitCode(err error) int {
	switch {
	case errors.Is(err, agent.ErrStepLimit), errors.Is(err, agent.ErrSessionTimeout):
		return exitLimit
	case errors.Is(err, context.Canceled), errors.Is(err, sandbox.ErrClosed):
		return exitInterrupted
	case errors.Is(err, sandbox.ErrConfig):
		return exitUsage
	case errors.Is(err, sandbox.ErrUnavailable), errors.Is(err, sandbox.ErrImageMissing), errors.Is(err, sandbox.ErrExecutor):
		return exitUnavailable
	}
	return exitFailed
}
