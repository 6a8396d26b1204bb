package workspace

import (
	"context"
	"fmt"

	"github.com/agentbox/agentbox/sandbox"
)

// Staged is the shape of an rw session on an overlay (Live): the sandbox
// writes to the upper layer, and after every call the host decides each
// change and promotes the allowed ones into the workspace, holding the
// rest.
type Staged struct {
	l        *Live
	finished bool
}

var _ Workspace = (*Staged)(nil)

// NewStaged makes the staged workspace of an rw session in store (see
// NewLive): a staging layer that cannot be made is refused with the
// reason and the fix.
func NewStaged(store Store, src string, o CopyOptions, decide WriteDecider) (*Staged, error) {
	l, err := NewLive(store, src, o, decide)
	if err != nil {
		return nil, err
	}
	return &Staged{l: l}, nil
}

// Live is the staged workspace and its records.
func (w *Staged) Live() *Live { return w.l }

// Shape implements Workspace.
func (w *Staged) Shape() Shape { return ShapeStaged }

// Describe implements Workspace.
func (w *Staged) Describe() string { return w.l.Describe() }

// Plan implements Workspace: an overlay over the workspace, staged.
func (w *Staged) Plan() Plan {
	var cfg sandbox.Config
	w.l.Configure(&cfg)
	return Plan{Dir: cfg.Workspace, Mode: cfg.WorkspaceMode, Copy: cfg.WorkspaceCopy, Overlay: cfg.Overlay}
}

// AfterCall implements Workspace: the call's allowed changes are promoted.
func (w *Staged) AfterCall(ctx context.Context, callID string) (*Checkpoint, error) {
	return w.l.AfterCall(ctx, callID)
}

// Finish implements Workspace: the last changes are promoted, the staging
// layer removed (its records kept for changes, rewind and fork), and the
// change list is every change promoted during the session.
func (w *Staged) Finish(_ context.Context, lost string) (Result, error) {
	w.finished = true
	res := Result{Files: withLost(nil, "")}
	cp, err := w.l.Finish("end")
	res.Last = cp
	if err != nil {
		return res, fmt.Errorf("promoting the last changes: %w", err)
	}
	if w.l.DiskFull {
		res.Notes = append(res.Notes, fmt.Sprintf("the session filled its disk bound (%s, sandbox.limits.disk): writes past it failed inside the sandbox with ENOSPC", w.l.DiskBound))
	}
	files, held, err := w.l.Stage.PromotedFiles()
	if err != nil {
		return res, err
	}
	if held > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("agentbox held %d change(s) the sandbox made (host hazards, files.write rules, conflicts): they are not in the workspace; review them with: agentbox changes %s --held", held, w.l.Session))
	}
	res.Files = withLost(files, lost)
	return res, nil
}

// Close implements Workspace: a staged workspace that never finished
// (nothing ran, nothing was promoted) is removed; a finished one keeps
// its records.
func (w *Staged) Close() error {
	_ = w.l.settle() // a promotion that failed was told to whoever waited for it; Close releases
	if w.finished || w.l.State != StateLive {
		return nil
	}
	w.finished = true
	return w.l.Remove()
}
