package workspace

import (
	"context"

	"github.com/agentbox/agentbox/sandbox"
)

// InPlace is the shape in which the sandbox works on the user's directory
// itself (rw without staging, ro): nothing is decided on the host, and the
// change list of an rw session compares the directory before and after.
type InPlace struct {
	dir   string
	mode  sandbox.WorkspaceMode
	watch bool // rw on a directory: the change list is taken
	snap  *SnapshotJob
}

var (
	_ Workspace = (*InPlace)(nil)
	_ Watcher   = (*InPlace)(nil)
)

// NewInPlace is the workspace dir worked on in place in mode ("" = rw);
// the change list of an rw (or copy-mode) session on a directory is taken by
// Snapshot, begun at Begin.
func NewInPlace(dir string, mode sandbox.WorkspaceMode) *InPlace {
	if mode == "" {
		mode = sandbox.WorkspaceRW
	}
	return &InPlace{dir: dir, mode: mode, watch: dir != "" && mode != sandbox.WorkspaceRO && mode != sandbox.WorkspaceCopy}
}

// Shape implements Workspace.
func (w *InPlace) Shape() Shape { return ShapeInPlace }

// Describe implements Workspace: the header's workspace mode says it all.
func (w *InPlace) Describe() string { return "" }

// Plan implements Workspace: the directory itself.
func (w *InPlace) Plan() Plan { return Plan{Dir: w.dir, Mode: w.mode} }

// Begin implements Watcher: the snapshot the change list starts from,
// taken in the background.
func (w *InPlace) Begin() {
	if w.watch && w.snap == nil {
		w.snap = StartSnapshot(w.dir)
	}
}

// Ready implements Watcher: the snapshot begun by Begin is complete.
func (w *InPlace) Ready() error {
	if w.snap == nil {
		return nil
	}
	_, err := w.snap.Wait() // Wait is idempotent: Finish takes the result
	return err
}

// AfterCall implements Workspace: in place, nothing is decided per call.
func (w *InPlace) AfterCall(context.Context, string) (*Checkpoint, error) { return nil, nil }

// Finish implements Workspace: the difference between the snapshot taken
// at Begin and the directory now.
func (w *InPlace) Finish(_ context.Context, lost string) (Result, error) {
	res := Result{Files: withLost(nil, "")}
	if w.snap == nil {
		return res, nil
	}
	before, err := w.snap.Wait()
	if err != nil {
		res.Notes = append(res.Notes, "cannot snapshot the workspace; files changed will not be listed: "+err.Error())
		return res, nil
	}
	after, err := Snapshot(w.dir)
	if err != nil {
		res.Notes = append(res.Notes, "cannot snapshot the workspace after the run: "+err.Error())
		return res, nil
	}
	res.Files = withLost(Diff(before, after), lost)
	return res, nil
}

// Close implements Workspace: a snapshot still being taken is waited for;
// the directory is the user's and stays as it is.
func (w *InPlace) Close() error {
	if w.snap != nil {
		_, _ = w.snap.Wait()
	}
	return nil
}
