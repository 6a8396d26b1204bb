package agent

import (
	"context"
	"errors"

	"github.com/agentbox/agentbox/sandbox"
)

// callStatus is one word for how a call ended, the same for the printer and
// the JSON events: "invalid", "denied", "interrupted", "timed out",
// "failed", or "ok".
func callStatus(o Outcome) string {
	switch {
	case o.Invalid:
		return "invalid"
	case o.Denied:
		return "denied"
	case o.Interrupted, o.Err != nil && (errors.Is(o.Err, context.Canceled) || errors.Is(o.Err, sandbox.ErrClosed)):
		return "interrupted"
	case o.TimedOut, o.Err != nil && errors.Is(o.Err, context.DeadlineExceeded), o.Err != nil && errors.Is(o.Err, ErrSessionTimeout):
		return "timed out"
	case o.Err != nil, o.Failure != "":
		return "failed"
	}
	return "ok"
}

// callFailed reports whether a call that was allowed did not do its job,
// and why.
func callFailed(o Outcome) (bool, string) {
	switch {
	case o.Failure != "":
		return true, o.Failure
	case o.Err != nil:
		return true, o.Err.Error()
	}
	return false, ""
}
