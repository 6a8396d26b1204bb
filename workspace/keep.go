package workspace

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/agentbox/agentbox/internal/fstree"
	"golang.org/x/sys/unix"
)

// keep is Promote for a copy-mode stage: it lists the changes staged
// since the last call (cost: the upper directory, never the workspace),
// decides each the way rw promotion does, holds the ones not allowed
// (moved out of the upper directory into held/<seq>/: gone from the
// sandbox's view, kept for review) and leaves the allowed ones where they
// are, for agentbox changes / apply / discard. Nothing is written to the
// workspace. The result is the call's checkpoint (nil: no change).
func (s *Stage) keep(callID string) (*Checkpoint, error) {
	changes, err := s.List()
	if err != nil {
		return nil, err
	}
	if len(changes) == 0 {
		return nil, nil
	}
	cp := &Checkpoint{Seq: s.st.Seq + 1, CallID: callID, Time: time.Now().UTC(), Changes: changes, Kept: true}
	p := &promoter{s: s, cp: cp}
	if err := p.hold(); err != nil {
		return nil, err
	}
	for _, c := range changes {
		if c.Held != "" {
			continue
		}
		// What the listing saw: a later write changes the stamp and the
		// entry is listed (and decided) again.
		low, _ := fstree.Lstat(unix.AT_FDCWD, filepath.Join(s.Lower, filepath.FromSlash(c.Path)))
		s.st.Kept[c.Path] = promotedEntry{Upper: c.upper, Lower: low}
	}
	s.st.Seq = cp.Seq
	if err := writeJSON(s.checkpointPath(cp.Seq), cp); err != nil {
		return nil, err
	}
	return cp, s.save()
}

// Staging is the staged decisions of an overlay copy (nil for a real
// copy, which is decided at apply only).
func (c *Copy) Staging() *Stage { return c.stage }

var _ Promoter = (*Copy)(nil)

// AfterCall decides what a call changed in an overlay copy: held changes
// leave the sandbox's view, allowed ones stay for apply (see Stage.Keep).
// A real copy has nothing to do here.
func (c *Copy) AfterCall(ctx context.Context, callID string) (*Checkpoint, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if c.stage == nil {
		return nil, nil
	}
	return c.stage.Promote(callID)
}

// DecideLast decides the last changes of an overlay copy once its
// sandbox is gone (nothing runs in it any more, kept background
// processes included), before the change list is taken.
func (c *Copy) DecideLast(callID string) (*Checkpoint, error) {
	if c.stage == nil {
		return nil, nil
	}
	cp, err := c.stage.Promote(callID)
	if err != nil {
		return nil, fmt.Errorf("deciding the last changes of the copy: %w", err)
	}
	return cp, nil
}
