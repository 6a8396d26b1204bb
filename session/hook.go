package session

import (
	"context"

	"github.com/agentbox/agentbox/agent"
)

var _ agent.CallHook = (*Session)(nil)

// AfterCall is the per-call step of the session (agent.CallHook): the
// pipeline calls it after every tool call that did not end the session,
// before the result goes back to the model or the client. On a staged
// workspace it promotes the call's changes (or, on a copy's overlay,
// decides them), records the checkpoint and tells the model what was held
// by appending to o.Text; an error ends the session like a sandbox
// failure.
func (s *Session) AfterCall(ctx context.Context, o *agent.Outcome) error {
	if s.staged == nil {
		return nil
	}
	return s.promote(ctx, o)
}
