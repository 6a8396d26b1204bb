package session

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/agentbox/agentbox/agent"
	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/sandbox"
	"github.com/agentbox/agentbox/workspace"
)

var _ agent.CallWaiter = (*Session)(nil)

// deferredCall is a bulk call's promotion finishing in the background
// (workspace.Deferrer) and the session's recorder of it, which writes
// the call's `changes` record and the alarms of what the copies held as
// soon as it is done (audit logs take concurrent appends); settle joins
// it.
type deferredCall struct {
	callID string
	done   chan struct{}
	err    error                    // the promotion's, or its records'
	late   []workspace.StagedChange // held by the copies: not yet told to the model
}

// afterCall decides and promotes the call's changes; def is pending when
// a bulk call's copies go on in the background (cp then holds the
// decisions alone).
func (s *Session) afterCall(ctx context.Context, o *agent.Outcome) (cp *workspace.Checkpoint, def workspace.Deferred, err error) {
	d, ok := s.ws.(workspace.Deferrer)
	if !ok {
		cp, err = s.ws.AfterCall(ctx, o.CallID)
		return cp, workspace.Deferred{}, err
	}
	if err := s.settle(); err != nil {
		return nil, workspace.Deferred{}, err
	}
	def, err = d.AfterCallDeferred(ctx, o.CallID)
	return def.Checkpoint, def, err
}

// deferCall starts the recorder of a pending promotion; told are the
// held changes already recorded and told to the model.
func (s *Session) deferCall(def workspace.Deferred, callID, tool string, told []workspace.StagedChange) {
	was := map[string]bool{}
	for _, c := range told {
		was[c.Path] = true
	}
	bg := &deferredCall{callID: callID, done: make(chan struct{})}
	s.bg = bg
	go func() {
		defer close(bg.done)
		cp, err := def.Wait()
		if err != nil {
			bg.err = fmt.Errorf("promoting the changes of call %s: %w", callID, err)
			_ = s.record(&audit.Record{Event: audit.EventError, CallID: callID, Tool: tool, Error: bg.err.Error()})
			return
		}
		if cp == nil {
			return
		}
		for _, c := range cp.HeldChanges() {
			if !was[c.Path] {
				bg.late = append(bg.late, c)
			}
		}
		bg.err = errors.Join(s.recordChanges(cp, tool), s.recordHeld(callID, tool, bg.late))
	}()
}

// BeforeCall implements agent.CallWaiter: a bulk call's promotion, which
// went on while the model thought, is finished before anything runs
// again.
func (s *Session) BeforeCall(context.Context) error { return s.settle() }

// settle waits for a deferred promotion and its records; what it held
// beyond the decisions the model was told of goes with the next call's
// result. A promotion that failed ends the session, as after a call.
func (s *Session) settle() error {
	bg := s.bg
	if bg == nil {
		return nil
	}
	s.bg = nil
	<-bg.done
	for _, c := range bg.late {
		s.lateHeld = append(s.lateHeld, lateHold{callID: bg.callID, c: c})
	}
	return bg.err
}

// lateHold is a change a deferred promotion held that the model was not
// told of with its call.
type lateHold struct {
	callID string
	c      workspace.StagedChange
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
