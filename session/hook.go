package session

import (
	"context"

	"github.com/agentbox/agentbox/agent"
)

var _ agent.CallHook = (*Session)(nil)

// AfterCall is the per-call step of the session (agent.CallHook): the
// pipeline calls it after every tool call that did not end the session,
// before the result goes back to the model or the client. The workspace
// decides the call's changes (a staged workspace promotes them, a copy's
// overlay keeps them for apply; in place nothing is decided); the session
// records the checkpoint and the held changes and tells the model what was
// held by appending to o.Text; an error ends the session like a sandbox
// failure.
func (s *Session) AfterCall(ctx context.Context, o *agent.Outcome) error {
	if s.ws == nil {
		return nil
	}
	return s.promote(ctx, o)
}
