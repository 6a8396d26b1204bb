package workspacetest

import (
	"context"

	"github.com/agentbox/agentbox/workspace"
)

// FakeDeferring is a Fake with the Deferrer power, for the session's
// tests: every call's promotion is pending until Release is closed (nil:
// at once), and its complete checkpoint promotes <call id>.txt and holds
// LateHeld (a change the decisions did not hold: a conflict found while
// copying). Its steps add "AfterCallDeferred <id>" and "Wait <id>".
type FakeDeferring struct {
	*Fake
	Release  chan struct{}
	LateHeld string
}

var _ workspace.Deferrer = (*FakeDeferring)(nil)

// AfterCallDeferred implements workspace.Deferrer.
func (f *FakeDeferring) AfterCallDeferred(_ context.Context, callID string) (workspace.Deferred, error) {
	if err := f.take("AfterCallDeferred "+callID, "AfterCall", "Ready", "AfterCall"); err != nil {
		return workspace.Deferred{}, err
	}
	decided := &workspace.Checkpoint{CallID: callID, Changes: []workspace.StagedChange{{Path: callID + ".txt", Change: "added", Type: workspace.TypeFile}}}
	return workspace.NewDeferred(decided, func() (*workspace.Checkpoint, error) {
		if f.Release != nil {
			<-f.Release
		}
		if err := f.take("Wait "+callID, "AfterCall", "AfterCall"); err != nil {
			return nil, err
		}
		cp := &workspace.Checkpoint{CallID: callID, Changes: append([]workspace.StagedChange(nil), decided.Changes...)}
		cp.Changes[0].After = "0123"
		if f.LateHeld != "" {
			cp.Changes = append(cp.Changes, workspace.StagedChange{Path: f.LateHeld, Change: "added", Type: workspace.TypeFile,
				Held: workspace.HazardConflict, Why: "changed in the workspace meanwhile"})
		}
		return cp, nil
	}), nil
}
