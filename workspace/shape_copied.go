package workspace

import (
	"context"
	"fmt"

	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/sandbox"
)

// Copied is the shape of a copy-mode session: the sandbox works on a
// copy of the workspace (an overlay, a real copy, or a real copy the
// sandbox holds itself and whose changes are pulled back over the
// channel), and its changes wait for review and apply.
type Copied struct {
	c        *Copy
	shape    Shape
	decide   WriteDecider // a pulled copy's, at Finish
	finished bool
	pended   bool // the copy's changes are recorded (pending, applied or empty)
	closed   bool
}

var (
	_ Workspace = (*Copied)(nil)
	_ Pender    = (*Copied)(nil)
)

// NewCopied makes the copy of the workspace src for one session in store
// (see NewCopy). pulled says that the sandbox holds its own copy and
// brings its changes back into this one (a real copy), decided at Finish
// by o.Decide and the host hazards.
func NewCopied(store Store, src string, o CopyOptions, pulled bool) (*Copied, error) {
	c, err := NewCopy(store, src, o)
	if err != nil {
		return nil, err
	}
	w := &Copied{c: c, shape: ShapeRealCopy, decide: o.Decide}
	switch {
	case c.Kind == KindOverlay:
		w.shape = ShapeOverlayCopy
	case pulled:
		w.shape = ShapePulledCopy
	}
	return w, nil
}

// Copy is the copy and its record.
func (w *Copied) Copy() *Copy { return w.c }

// Shape implements Workspace.
func (w *Copied) Shape() Shape { return w.shape }

// Describe implements Workspace.
func (w *Copied) Describe() string { return w.c.Describe() }

// Plan implements Workspace: an overlay over the workspace, or the real
// copy, mounted read-write.
func (w *Copied) Plan() Plan {
	cfg := sandbox.Config{Workspace: w.c.Workspace}
	w.c.Configure(&cfg)
	return Plan{Dir: cfg.Workspace, Mode: cfg.WorkspaceMode, Copy: cfg.WorkspaceCopy, Overlay: cfg.Overlay}
}

// AfterCall implements Workspace: an overlay copy's changes are decided
// (held ones leave the sandbox's view, allowed ones stay for apply); a
// real copy has nothing to do.
func (w *Copied) AfterCall(ctx context.Context, callID string) (*Checkpoint, error) {
	return w.c.AfterCall(ctx, callID)
}

// Finish implements Workspace: an overlay copy's last changes are
// decided, a pulled copy's changes all are (held ones leave the copy, are
// kept for review; a copy whose changes cannot be decided says
// incomplete), and the change list is the copy's.
func (w *Copied) Finish(_ context.Context, lost string) (Result, error) {
	w.finished = true
	if lost != "" {
		w.c.MarkIncomplete(lost)
	}
	var res Result
	var err error
	heldNote := "agentbox held %d change(s) the sandbox made (host hazards, files.write rules): they are not in the copy and will not be applied; review them with: agentbox changes %s --held"
	switch w.shape {
	case ShapeOverlayCopy:
		if res.Last, err = w.c.DecideLast("end"); err == nil {
			var cps []Checkpoint
			if cps, err = w.c.Staging().Checkpoints(); err == nil {
				held := 0
				for _, k := range cps {
					held += len(k.HeldChanges())
				}
				if held > 0 {
					res.Notes = append(res.Notes, fmt.Sprintf(heldNote, held, w.c.Session))
				}
			}
		}
	case ShapePulledCopy:
		cp, herr := w.c.HoldPulled("end", w.decide)
		switch {
		case herr != nil:
			w.c.MarkIncomplete("its changes could not be decided")
			res.Notes = append(res.Notes, herr.Error())
		case cp != nil:
			res.Last = cp
			res.Notes = append(res.Notes, fmt.Sprintf(heldNote, len(cp.Changes), w.c.Session))
		}
	}
	files, serr := w.c.Scan()
	if serr != nil {
		res.Notes = append(res.Notes, "cannot list the changes of the workspace copy: "+serr.Error())
	}
	res.Files = withLost(files, "")
	return res, err
}

// Pend implements Pender: the copy's changes are recorded once the
// sandbox is gone (an empty copy is removed), then applied (apply) or
// left for review, said in the notes.
func (w *Copied) Pend(apply bool) (Result, error) {
	c := w.c
	var res Result
	changes, err := c.Finish()
	if err != nil {
		return res, err
	}
	w.pended = true
	res.Files = changes
	if c.DiskFull {
		res.Notes = append(res.Notes, fmt.Sprintf("the session filled its disk bound (%s, sandbox.limits.disk): writes past it failed inside the sandbox with ENOSPC", c.DiskBound))
	}
	n := len(Counted(changes))
	if n == 0 {
		return res, nil
	}
	if why := audit.Incomplete(changes); why != "" {
		res.Notes = append(res.Notes, fmt.Sprintf("the change list of session %s is INCOMPLETE (%s): nothing can be applied from it; the copy stays in %s", c.Session, why, c.Root))
		return res, fmt.Errorf("%w (%s)", ErrIncomplete, why)
	}
	if !apply {
		res.Notes = append(res.Notes, fmt.Sprintf("%d change(s) wait in session %s; the workspace is untouched.\n  review: agentbox changes %s\n  apply:  agentbox apply %s", n, c.Session, c.Session, c.Session))
		return res, nil
	}
	if err := c.Apply(); err != nil {
		return res, err
	}
	res.Notes = append(res.Notes, fmt.Sprintf("applied %d change(s) to %s", n, c.Workspace))
	return res, nil
}

// Close implements Workspace: a copy that never finished (nothing ran in
// it) is removed; a finished one stays for its changes, recorded as
// pending review if Pend did not record them (its bounded upper layer
// moved off its disk image). A caller that takes the changes itself
// (batch) does not Close: it removes the copy (Copy().Remove) instead.
func (w *Copied) Close() error {
	if w.closed {
		return nil
	}
	w.closed = true
	switch {
	case !w.finished && w.c.State == StateRunning:
		return w.c.Remove()
	case w.finished && !w.pended:
		w.pended = true
		_, err := w.c.Finish()
		return err
	}
	return nil
}
