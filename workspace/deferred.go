package workspace

import "context"

// BulkFiles is how many files a call must write for its promotion to be
// deferred (Deferrer): a package install, a virtual environment, an
// unpacked archive. A call that edits a few files is promoted before its
// result goes back, as ever.
const BulkFiles = 1000

// Deferrer is the power of a workspace that finishes a bulk call's
// promotion while the model thinks. AfterCallDeferred lists and decides
// the call's changes at once (every hazard and files.write decision runs
// before it returns); when the call wrote at least BulkFiles files, their
// copies into the workspace, the holds and the records go on in the
// background and the Deferred is pending. Whoever calls it waits for the
// pending promotion (Deferred.Wait) before the sandbox runs anything
// again; the workspace's own steps (AfterCall, Finish, Close) wait for it
// too, so nothing of it outlives the workspace.
type Deferrer interface {
	AfterCallDeferred(ctx context.Context, callID string) (Deferred, error)
}

// Deferred is what AfterCallDeferred decided.
type Deferred struct {
	// Checkpoint is the call's checkpoint (nil: nothing changed). While
	// pending, it holds the decisions alone: what they held (the copies
	// may hold more: a conflict, a full disk, content that changed).
	Checkpoint *Checkpoint
	wait       func() (*Checkpoint, error)
}

// Pending reports whether the promotion goes on in the background.
func (d Deferred) Pending() bool { return d.wait != nil }

// Wait waits for a pending promotion and returns the complete checkpoint
// (Checkpoint when not pending).
func (d Deferred) Wait() (*Checkpoint, error) {
	if d.wait == nil {
		return d.Checkpoint, nil
	}
	return d.wait()
}

// inflight is a deferred promotion under way.
type inflight struct {
	done  chan struct{}
	cp    *Checkpoint
	err   error
	taken bool // Wait returned err (on the caller's goroutine)
}

// AfterCallDeferred implements Deferrer.
func (l *Live) AfterCallDeferred(ctx context.Context, callID string) (Deferred, error) {
	if err := l.settle(); err != nil {
		return Deferred{}, err
	}
	if err := ctx.Err(); err != nil {
		return Deferred{}, err
	}
	cp, err := l.Stage.decideCall(callID)
	if err != nil || cp == nil {
		return Deferred{}, err
	}
	if bulkWrites(cp) < BulkFiles {
		cp, err = l.Stage.promoteDecided(cp)
		return Deferred{Checkpoint: cp}, err
	}
	decided := &Checkpoint{Seq: cp.Seq, CallID: cp.CallID, Time: cp.Time, Changes: append([]StagedChange(nil), cp.Changes...)}
	f := &inflight{done: make(chan struct{})}
	l.bg = f
	go func() {
		defer close(f.done)
		f.cp, f.err = l.Stage.promoteDecided(cp)
	}()
	return Deferred{Checkpoint: decided, wait: func() (*Checkpoint, error) {
		<-f.done
		f.taken = true
		return f.cp, f.err
	}}, nil
}

// settle waits for a deferred promotion under way, if any, and returns
// its error unless Wait gave it already.
func (l *Live) settle() error {
	f := l.bg
	if f == nil {
		return nil
	}
	<-f.done
	l.bg = nil
	if f.taken {
		return nil
	}
	return f.err
}

// bulkWrites is how many files cp promotes.
func bulkWrites(cp *Checkpoint) int {
	n := 0
	for _, c := range cp.Changes {
		if c.Held == "" && c.Type == TypeFile && (c.Change == "added" || c.Change == "modified") {
			n++
		}
	}
	return n
}

var _ Deferrer = (*Live)(nil)
var _ Deferrer = (*Staged)(nil)

// AfterCallDeferred implements Deferrer.
func (w *Staged) AfterCallDeferred(ctx context.Context, callID string) (Deferred, error) {
	return w.l.AfterCallDeferred(ctx, callID)
}

// NewDeferred is a pending Deferred whose promotion wait finishes (for a
// Deferrer outside this package: fakes in tests).
func NewDeferred(decided *Checkpoint, wait func() (*Checkpoint, error)) Deferred {
	return Deferred{Checkpoint: decided, wait: wait}
}
