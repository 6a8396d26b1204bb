package agent

import (
	"context"
	"fmt"
	"strings"

	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/sandbox"
	"github.com/agentbox/agentbox/workspace"
)

// Promoter is the after-call step of a staged workspace: promote what the
// call changed into the workspace, holding what may not go there.
// *workspace.Live implements it.
type Promoter interface {
	AfterCall(ctx context.Context, callID string) (*workspace.Checkpoint, error)
}

var (
	_ Promoter = (*workspace.Live)(nil)
	_ Promoter = (*workspace.Copy)(nil)
)

// StageDecider decides staged changes by the policy's files.write rules:
// the first deny glob that matches, or no allow glob. An allow glob
// without wildcards names a path explicitly (a host hazard it names is
// then promoted).
func StageDecider(p Decider) workspace.WriteDecider {
	allow, deny := p.FileRules(true)
	return func(rel string) (bool, string, bool) {
		v, rule, glob := policy.MatchFile(allow, deny, rel, true)
		if v != policy.Allow {
			return true, rule, false
		}
		return false, rule, !strings.ContainsAny(glob, "*?[{")
	}
}

// promote runs after every call on a staged workspace: it records the
// call's checkpoint (a `changes` record), an alarm per held change, and
// tells the model what was held and why. A promotion that fails ends the
// session: nothing more runs while changes cannot be decided.
func (t *Tools) promote(ctx context.Context, o *Outcome) {
	// A call the caller cancelled (its processes killed, the session
	// going on) still has its changes decided and promoted.
	cp, err := t.Staged.AfterCall(context.WithoutCancel(ctx), o.CallID)
	if err != nil {
		o.Err = fmt.Errorf("promoting the changes of call %s: %w", o.CallID, err)
		_ = t.record(&audit.Record{Event: audit.EventError, CallID: o.CallID, Tool: o.Tool, Error: o.Err.Error()})
		return
	}
	if cp == nil {
		return
	}
	if err := t.recordCheckpoint(cp, o.Tool); err != nil {
		o.Err = err
		return
	}
	held := cp.HeldChanges()
	if len(held) == 0 {
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n[agentbox held %d change(s) of this call: they will not reach the user's workspace and are gone from the sandbox. Do not try to make them another way.]\n", len(held))
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

// recordCheckpoint writes a call's checkpoint to the audit log.
func (t *Tools) recordCheckpoint(cp *workspace.Checkpoint, tool string) error {
	var files []audit.FileChange
	for _, c := range cp.Promoted() {
		if c.Type != workspace.TypeDir || c.Change == workspace.ChangeMode {
			files = append(files, audit.FileChange{Path: c.Path, SHA256: c.After, SHA256Before: c.Before, Bytes: c.Bytes, Change: c.Change})
		}
	}
	if len(files) > 0 {
		reason := fmt.Sprintf("checkpoint %d", cp.Seq)
		if cp.Kept {
			reason = fmt.Sprintf("checkpoint %d, kept in the copy for apply", cp.Seq)
		}
		if err := t.record(&audit.Record{Event: audit.EventChanges, CallID: cp.CallID, Tool: tool,
			Reason: reason, Files: files}); err != nil {
			return err
		}
	}
	for _, c := range cp.HeldChanges() {
		if err := t.record(&audit.Record{Event: audit.EventAlarm, CallID: cp.CallID, Tool: tool,
			Rule: c.Held, Path: c.Path, What: "held " + c.Change, Action: "held", Reason: c.Why}); err != nil {
			return err
		}
	}
	return nil
}

// FinishStaged promotes the last changes of a staged session once its
// sandbox is gone and records them (call id "end").
func (t *Tools) FinishStaged(l *workspace.Live) (*workspace.Checkpoint, error) {
	cp, err := l.Finish("end")
	if err != nil {
		return nil, err
	}
	if cp != nil {
		err = t.recordCheckpoint(cp, "")
	}
	return cp, err
}

// FinishKept decides the last changes of a copy-mode session (an overlay
// copy) once its sandbox is gone, and records them (call id "end").
func (t *Tools) FinishKept(c *workspace.Copy) (*workspace.Checkpoint, error) {
	cp, err := c.DecideLast("end")
	if err == nil && cp != nil {
		err = t.recordCheckpoint(cp, "")
	}
	return cp, err
}
