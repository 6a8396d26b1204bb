package workspacetest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"

	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/sandbox"
	"github.com/agentbox/agentbox/workspace"
)

// ErrOrder: a lifecycle step was taken out of the order
// workspace.Workspace's doc comment gives.
var ErrOrder = errors.New("workspace lifecycle step out of order")

// Fake is a workspace.Workspace for tests of the layers above (session):
// it works on its directory in place and lists changes by content (what
// Begin read against what Finish reads), and it checks the lifecycle's
// order: a step taken out of order (AfterCall before Begin or after
// Finish, Finish twice, anything but Close after Close) fails with
// ErrOrder and is counted in Misuse. Steps records every step taken.
type Fake struct {
	Dir string

	mu     sync.Mutex
	before map[string]string // slash path -> sha256 of content, from Begin
	step   string            // the last step taken
	Steps  []string          // every step, in order ("AfterCall call-1", ...)
	Misuse []string          // the steps taken out of order
}

var (
	_ workspace.Workspace = (*Fake)(nil)
	_ workspace.Watcher   = (*Fake)(nil)
)

// NewFake is a fake workspace on dir.
func NewFake(dir string) *Fake { return &Fake{Dir: dir} }

// take records the step name (of kind step), checking that it may
// follow the last one (one of after).
func (f *Fake) take(name, step string, after ...string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.Steps = append(f.Steps, name)
	if slices.Contains(after, f.step) {
		f.step = step
		return nil
	}
	last := f.step
	if last == "" {
		last = "nothing"
	}
	f.Misuse = append(f.Misuse, name+" after "+last)
	return fmt.Errorf("%w: %s after %s", ErrOrder, name, last)
}

// Shape implements workspace.Workspace.
func (f *Fake) Shape() workspace.Shape { return workspace.ShapeInPlace }

// Describe implements workspace.Workspace.
func (f *Fake) Describe() string { return "a fake workspace on " + f.Dir }

// Plan implements workspace.Workspace.
func (f *Fake) Plan() workspace.Plan { return workspace.Plan{Dir: f.Dir, Mode: sandbox.WorkspaceRW} }

// Begin implements workspace.Watcher: the contents now.
func (f *Fake) Begin() {
	if f.take("Begin", "Begin", "") != nil {
		return
	}
	before, err := hashTree(f.Dir)
	f.mu.Lock()
	defer f.mu.Unlock()
	if err != nil {
		f.Misuse = append(f.Misuse, "Begin: "+err.Error())
	}
	f.before = before
}

// Ready implements workspace.Watcher.
func (f *Fake) Ready() error { return f.take("Ready", "Ready", "Begin") }

// AfterCall implements workspace.Workspace: nothing is decided.
func (f *Fake) AfterCall(_ context.Context, callID string) (*workspace.Checkpoint, error) {
	return nil, f.take("AfterCall "+callID, "AfterCall", "Ready", "AfterCall")
}

// Finish implements workspace.Workspace: what changed since Begin.
func (f *Fake) Finish(_ context.Context, lost string) (workspace.Result, error) {
	res := workspace.Result{Files: []audit.FileChange{}}
	if err := f.take("Finish", "Finish", "Ready", "AfterCall"); err != nil {
		return res, err
	}
	after, err := hashTree(f.Dir)
	if err != nil {
		return res, err
	}
	for p, h := range after {
		switch b, ok := f.before[p]; {
		case !ok:
			res.Files = append(res.Files, audit.FileChange{Path: p, SHA256: h, Change: audit.ChangeAdded})
		case b != h:
			res.Files = append(res.Files, audit.FileChange{Path: p, SHA256: h, SHA256Before: b, Change: audit.ChangeModified})
		}
	}
	for p, b := range f.before {
		if _, ok := after[p]; !ok {
			res.Files = append(res.Files, audit.FileChange{Path: p, SHA256Before: b, Change: audit.ChangeDeleted})
		}
	}
	sort.Slice(res.Files, func(i, j int) bool { return res.Files[i].Path < res.Files[j].Path })
	if lost != "" {
		res.Files = append(res.Files, audit.IncompleteMarker(lost))
	}
	return res, nil
}

// Close implements workspace.Workspace: nothing to release.
func (f *Fake) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.Steps = append(f.Steps, "Close")
	f.step = "Close"
	return nil
}

// hashTree is the sha256 of every regular file below dir.
func hashTree(dir string) (map[string]string, error) {
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		sum := sha256.Sum256(b)
		out[filepath.ToSlash(rel)] = hex.EncodeToString(sum[:])
		return nil
	})
	return out, err
}
