package session

import (
	"context"
	"errors"

	"github.com/agentbox/agentbox/agent"
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
			bg.err = s.promotionFailed(callID, tool, err)
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
// result (s.late). A promotion that failed ends the session, as after a
// call.
func (s *Session) settle() error {
	bg := s.bg
	if bg == nil {
		return nil
	}
	s.bg = nil
	<-bg.done
	if len(bg.late) > 0 {
		s.late = bg
	}
	return bg.err
}

// tellLate tells the model, with o's result, what a deferred promotion of
// an earlier call held beyond what it was told then.
func (s *Session) tellLate(o *agent.Outcome) {
	if s.late != nil {
		tellHeld(o, "more change(s) of call "+s.late.callID+" while promoting it", s.late.late)
		s.late = nil
	}
}
