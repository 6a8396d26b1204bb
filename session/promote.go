package session

import (
	"context"
	"fmt"
	"strings"

	"github.com/agentbox/agentbox/agent"
	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/sandbox"
	"github.com/agentbox/agentbox/workspace"
)

// maxListed bounds the held changes spelled out to the model (as the
// pipeline bounds denied execs and alarms).
const maxListed = 10

// promote runs after every call on a staged workspace: it records the
// call's checkpoint (a `changes` record), an alarm per held change, and
// tells the model what was held and why. A promotion that fails ends the
// session: nothing more runs while changes cannot be decided.
func (s *Session) promote(ctx context.Context, o *agent.Outcome) error {
	s.tellLate(o)
	// A call the caller cancelled (its processes killed, the session
	// going on) still has its changes decided and promoted.
	cp, def, err := s.afterCall(context.WithoutCancel(ctx), o)
	if err != nil {
		return s.promotionFailed(o.CallID, o.Tool, err)
	}
	if cp == nil {
		return nil
	}
	held := cp.HeldChanges()
	if def.Pending() {
		// The decisions' holds are final: their alarms now; the rest
		// when the copies are done (deferCall).
		if err := s.recordHeld(cp.CallID, o.Tool, held); err != nil {
			return err
		}
		s.deferCall(def, o.CallID, o.Tool, held)
	} else if err := s.recordCheckpoint(cp, o.Tool); err != nil {
		return err
	}
	tellHeld(o, "change(s) of this call", held)
	return nil
}

// promotionFailed records that the changes of a call could not be
// promoted and returns the error that ends the session.
func (s *Session) promotionFailed(callID, tool string, err error) error {
	err = fmt.Errorf("promoting the changes of call %s: %w", callID, err)
	_ = s.record(&audit.Record{Event: audit.EventError, CallID: callID, Tool: tool, Error: err.Error()})
	return err
}

// tellHeld tells the model, with o's result, which changes were held and
// why (what: whose changes they were), and shows them as alarms.
func tellHeld(o *agent.Outcome, what string, held []workspace.StagedChange) {
	if len(held) == 0 {
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n[agentbox held %d %s: they will not reach the user's workspace and are gone from the sandbox. Do not try to make them another way.]\n", len(held), what)
	for i, c := range held {
		o.Alarms = append(o.Alarms, sandbox.Alarm{Path: c.Path, What: "held", Action: "held", Rule: c.Held})
		if i < maxListed {
			fmt.Fprintf(&b, "  %s %s: held by %s (%s)\n", c.Change, c.Path, c.Held, c.Why)
		} else if i == maxListed {
			fmt.Fprintf(&b, "  … %d more (see the audit log)\n", len(held)-maxListed)
		}
	}
	o.Text += b.String()
}
