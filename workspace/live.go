package workspace

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/sandbox"
)

// States of a staged rw session's record (Meta.State).
const (
	StateLive   = "live"   // a sandbox works on the staged workspace; changes are promoted after every call
	StateStaged = "staged" // ended: everything allowed was promoted; checkpoints and held changes are kept
)

// Promoter is the after-call step of a staged workspace: it promotes what
// the call changed and returns the call's checkpoint (nil: no change).
type Promoter interface {
	AfterCall(ctx context.Context, callID string) (*Checkpoint, error)
}

// Live is an rw session's staged workspace: the sandbox writes to an
// overlay's upper layer; after every call the host decides each change
// and promotes the allowed ones into the workspace at once (the user sees
// the work live), holding the rest.
type Live struct {
	*Copy
	Stage *Stage
	bg    *inflight // a bulk call's promotion under way (AfterCallDeferred)
}

var _ Promoter = (*Live)(nil)

// NewLive makes the staged workspace of an rw session in store. A staging
// layer that cannot be made is refused with the reason and the fix: rw
// never falls back to writing into the workspace directly.
func NewLive(store Store, src string, o CopyOptions, decide WriteDecider) (*Live, error) {
	if o.NoOverlay {
		why := o.NoOverlayWhy
		if why == "" {
			why = "turned off (AGENTBOX_OVERLAY=off)"
		}
		return nil, fmt.Errorf("%w: rw mode stages the sandbox's writes in an overlay, which is unavailable here (%s); use --workspace-mode copy (a real copy, reviewed with agentbox changes/apply) or ro", sandbox.ErrConfig, why)
	}
	o.Decide = decide
	c, err := NewCopy(store, src, o)
	if err != nil {
		return nil, err
	}
	if c.Kind != KindOverlay {
		_ = c.Remove()
		return nil, fmt.Errorf("%w: rw mode stages the sandbox's writes in an overlay, which is unavailable here (%s); use --workspace-mode copy (a real copy, reviewed with agentbox changes/apply) or ro", sandbox.ErrConfig, c.noOvl)
	}
	st := c.stage
	st.Keep = false // rw promotes
	c.State = StateLive
	if err := c.save(); err != nil {
		_ = c.Remove()
		return nil, err
	}
	return &Live{Copy: c, Stage: st}, nil
}

// Configure points a sandbox configuration at the staged workspace.
func (l *Live) Configure(cfg *sandbox.Config) {
	l.Copy.Configure(cfg)
	cfg.WorkspaceMode = sandbox.WorkspaceRW
	cfg.WorkspaceCopy = false
	cfg.Overlay.Staged = true
}

// Describe is one line for the start header.
func (l *Live) Describe() string {
	return "staged: the sandbox writes to an overlay; agentbox promotes each call's allowed changes into the workspace (held ones: agentbox changes " + l.Session + " --held); disk bound: " + l.DiskBound
}

// AfterCall promotes what the call changed.
func (l *Live) AfterCall(ctx context.Context, callID string) (*Checkpoint, error) {
	if err := l.settle(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return l.Stage.Promote(callID)
}

// Finish promotes the last changes once the sandbox is gone (nothing runs
// in it any more), removes the staging layer and keeps the records
// (checkpoints, before-images, held changes) for changes, rewind and fork.
func (l *Live) Finish(callID string) (*Checkpoint, error) {
	if err := l.settle(); err != nil {
		return nil, err
	}
	cp, err := l.Stage.Promote(callID)
	if err != nil {
		return nil, err
	}
	removeScrub(l.Upper())
	l.noteFull()
	l.unmount()
	if ln := l.OverlayLower(); ln != "" {
		_ = os.Remove(ln) // the link only: Remove never follows it
	}
	for _, d := range []string{l.Upper(), l.OverlayWork(), filepath.Join(l.Root, "upper"), filepath.Join(l.Root, "work")} {
		if _, serr := os.Lstat(d); serr == nil {
			_ = RemoveTree(d)
		}
	}
	l.State = StateStaged
	return cp, l.save()
}

// StageDir is where a staged session keeps its records.
func (c *Copy) StageDir() string { return filepath.Join(c.Root, "stage") }

// LoadStage opens the records of a staged session for review and rewind.
func LoadStage(store Store, session string) (*Copy, *Stage, error) {
	c, err := store.Load(session)
	if err != nil {
		return nil, nil, err
	}
	st, err := OpenStage(c.Upper(), c.Workspace, filepath.Join(c.Root, "stage"), nil)
	if err != nil {
		return nil, nil, err
	}
	return c, st, nil
}

// PromotedFiles lists what the session promoted into the workspace, the
// last change of each file (directories left out), and how many changes
// were held: the session's change list.
func (s *Stage) PromotedFiles() ([]audit.FileChange, int, error) {
	cps, err := s.Checkpoints()
	if err != nil {
		return nil, 0, err
	}
	last := map[string]audit.FileChange{}
	var order []string
	held := 0
	for _, cp := range cps {
		held += len(cp.HeldChanges())
		for _, c := range cp.Promoted() {
			if c.Type == TypeDir {
				continue // the files tell
			}
			if _, ok := last[c.Path]; !ok {
				order = append(order, c.Path)
			}
			last[c.Path] = audit.FileChange{Path: c.Path, SHA256: c.After, SHA256Before: c.Before, Bytes: c.Bytes, Change: c.Change}
		}
	}
	out := make([]audit.FileChange, 0, len(order))
	for _, p := range order {
		out = append(out, last[p])
	}
	return out, held, nil
}
