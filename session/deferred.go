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

var _ agent.CallWaiter = (*Session)(nil)

// deferredCall is a bulk call's promotion finishing in the background
// (workspace.Deferrer): its records are written when it is waited for.
type deferredCall struct {
	d      workspace.Deferred
	callID string
	tool   string
	told   map[string]bool // held changes the model was told of with the call
}

// lateHold is a change a deferred promotion held that the model was not
// told of with its call.
type lateHold struct {
	callID string
	c      workspace.StagedChange
}

// afterCall decides and promotes the call's changes; pending: a bulk
// call's copies go on in the background (cp holds the decisions alone,
// and its records wait for settle).
func (s *Session) afterCall(ctx context.Context, o *agent.Outcome) (cp *workspace.Checkpoint, pending bool, err error) {
	d, ok := s.ws.(workspace.Deferrer)
	if !ok {
		cp, err = s.ws.AfterCall(ctx, o.CallID)
		return cp, false, err
	}
	if err := s.settle(); err != nil {
		return nil, false, err
	}
	def, err := d.AfterCallDeferred(ctx, o.CallID)
	if err != nil || !def.Pending() {
		return def.Checkpoint, false, err
	}
	s.bg = &deferredCall{d: def, callID: o.CallID, tool: o.Tool, told: map[string]bool{}}
	return def.Checkpoint, true, nil
}

// BeforeCall implements agent.CallWaiter: a bulk call's promotion, which
// went on while the model thought, is finished before anything runs
// again.
func (s *Session) BeforeCall(context.Context) error { return s.settle() }

// settle waits for a deferred promotion and writes its records (the
// call's `changes` and an alarm per held change); what it held beyond the
// decisions the model was told of goes with the next call's result. A
// promotion that failed ends the session, as after a call.
func (s *Session) settle() error {
	bg := s.bg
	if bg == nil {
		return nil
	}
	s.bg = nil
	cp, err := bg.d.Wait()
	if err != nil {
		err = fmt.Errorf("promoting the changes of call %s: %w", bg.callID, err)
		_ = s.record(&audit.Record{Event: audit.EventError, CallID: bg.callID, Tool: bg.tool, Error: err.Error()})
		return err
	}
	if cp == nil {
		return nil
	}
	if err := s.recordCheckpoint(cp, bg.tool); err != nil {
		return err
	}
	for _, c := range cp.HeldChanges() {
		if !bg.told[c.Path] {
			s.lateHeld = append(s.lateHeld, lateHold{callID: bg.callID, c: c})
		}
	}
	return nil
}

// tellLate tells the model, with o's result, what a deferred promotion of
// an earlier call held beyond what it was told then.
func (s *Session) tellLate(o *agent.Outcome) {
	if len(s.lateHeld) == 0 {
		return
	}
	late := s.lateHeld
	s.lateHeld = nil
	var b strings.Builder
	fmt.Fprintf(&b, "\n[agentbox held %d more change(s) of call %s while promoting it: they will not reach the user's workspace and are gone from the sandbox. Do not try to make them another way.]\n", len(late), late[0].callID)
	for i, h := range late {
		o.Alarms = append(o.Alarms, sandbox.Alarm{Path: h.c.Path, What: "held", Action: "held", Rule: h.c.Held})
		if i < maxListed {
			fmt.Fprintf(&b, "  %s %s: held by %s (%s)\n", h.c.Change, h.c.Path, h.c.Held, h.c.Why)
		} else if i == maxListed {
			fmt.Fprintf(&b, "  … %d more (see the audit log)\n", len(late)-maxListed)
		}
	}
	o.Text += b.String()
}
