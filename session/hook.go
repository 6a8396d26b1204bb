package session

import (
	"context"

	"github.com/agentbox/agentbox/agent"
)

// AfterCall is the per-call step of the session: the pipeline
// (agent.Tools.AfterCall) calls it after every tool call that ran in the
// sandbox, before the result goes back to the model or the client. It is
// where host-side work that follows each call plugs in (promotion of the
// staged changes, held changes reported to the model by appending to
// o.Text); an error ends the session like a sandbox failure. Today it does
// nothing.
func (s *Session) AfterCall(ctx context.Context, o *agent.Outcome) error {
	return nil
}
