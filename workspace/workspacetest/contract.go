// Package workspacetest is the contract suite every workspace.Workspace
// implementation passes, fakes included (Fake), as sandboxtest is for
// sandbox runtimes: the lifecycle in the order workspace.Workspace's doc
// comment gives it, each shape's rules for where a change goes (in the
// user's directory at once, or kept for apply), held changes staying
// out, a change list that says incomplete, Close idempotent and nothing
// left behind. The sandbox is played by the test: it writes through the
// mount plan (View mounts an overlay as the engine would).
package workspacetest

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/internal/testutil/fsclock"
	"github.com/agentbox/agentbox/sandbox"
	"github.com/agentbox/agentbox/workspace"
)

// New makes a fresh workspace of the implementation under test on the
// user's directory src, keeping whatever it keeps in store (an empty
// directory of its own). Failing to make it fails or skips the test.
type New func(t *testing.T, src, store string) workspace.Workspace

// seed is the user's directory every case starts from.
var seed = map[string]string{"a.txt": "a\n", "b.txt": "b\n", "dir/c.txt": "c\n"}

// Run runs the whole suite on the implementation newWS makes.
func Run(t *testing.T, newWS New) {
	t.Run("Plan", func(t *testing.T) { testPlan(t, newWS) })
	t.Run("Changes", func(t *testing.T) { testChanges(t, newWS) })
	t.Run("Quiet", func(t *testing.T) { testQuiet(t, newWS) })
	t.Run("Held", func(t *testing.T) { testHeld(t, newWS) })
	t.Run("Lost", func(t *testing.T) { testLost(t, newWS) })
	t.Run("Discard", func(t *testing.T) { testDiscard(t, newWS) })
	t.Run("Pend", func(t *testing.T) { testPend(t, newWS) })
	t.Run("Deferred", func(t *testing.T) { testDeferred(t, newWS) })
}

// session is one session played by the test: the workspace, the user's
// directory, the store, and the sandbox's view of the plan.
type session struct {
	ws                workspace.Workspace
	src, store, view  string
	unmount           func()
	shape             workspace.Shape
	ctx               context.Context
	finished, stopped bool
}

// begin makes the workspace and starts the "sandbox": Begin and Ready
// for a Watcher, then the view of its plan.
func begin(t *testing.T, newWS New) *session {
	t.Helper()
	src, store := filepath.Join(t.TempDir(), "src"), filepath.Join(t.TempDir(), "store")
	writeTree(t, src, seed)
	fsclock.Tick(t, src)
	s := &session{src: src, store: store, ctx: context.Background()}
	s.ws = newWS(t, src, store)
	s.shape = s.ws.Shape()
	t.Cleanup(func() { _ = s.ws.Close() })
	if w, ok := s.ws.(workspace.Watcher); ok {
		w.Begin()
		if err := w.Ready(); err != nil {
			t.Fatalf("Ready: %v", err)
		}
	}
	p := s.ws.Plan()
	if p.Mode != sandbox.WorkspaceRW {
		t.Fatalf("plan %+v: the suite's workspaces are rw", p)
	}
	if p.Copy != s.shape.Copies() {
		t.Errorf("plan %+v: Copy %v, but the shape %s copies: %v", p, p.Copy, s.shape, s.shape.Copies())
	}
	s.view, s.unmount = View(t, p)
	return s
}

// stop ends the sandbox: nothing writes through the view any more.
func (s *session) stop() {
	if !s.stopped {
		s.stopped = true
		s.unmount()
	}
}

// finish stops the sandbox and finishes the workspace.
func (s *session) finish(t *testing.T, lost string) workspace.Result {
	t.Helper()
	s.stop()
	res, err := s.ws.Finish(s.ctx, lost)
	if err != nil {
		t.Fatalf("Finish: %v", err)
	}
	if res.Files == nil {
		t.Error("Finish: a nil change list (want an empty one)")
	}
	s.finished = true
	return res
}

// skip ends a session the case does not apply to (its shape why) as
// any session ends, and skips the case.
func (s *session) skip(t *testing.T, why string) {
	t.Helper()
	s.finish(t, "")
	s.close(t)
	t.Skipf("the shape %s %s", s.shape, why)
}

// close closes the workspace twice (idempotent) and checks that nothing
// it made is still mounted.
func (s *session) close(t *testing.T) {
	t.Helper()
	for i := range 2 {
		if err := s.ws.Close(); err != nil {
			t.Errorf("Close #%d: %v", i+1, err)
		}
	}
	if m := MountsUnder(t, s.store); len(m) > 0 {
		t.Errorf("mounted after Close: %v", m)
	}
}

func testPlan(t *testing.T, newWS New) {
	s := begin(t, newWS)
	if got := readTree(t, s.view); !equal(got, seed) {
		t.Errorf("the sandbox's view %v, want the workspace %v", got, seed)
	}
	if !reflect.DeepEqual(s.ws.Plan(), s.ws.Plan()) {
		t.Error("Plan changed between two calls")
	}
	s.finish(t, "")
	s.close(t)
}

// testChanges: an addition, a modification and a deletion reach the
// user's directory after the call (in place, staged) or only at apply
// (copies), and the change list names exactly them.
func testChanges(t *testing.T, newWS New) {
	s := begin(t, newWS)
	write(t, s.view, "new.txt", "new\n")
	write(t, s.view, "a.txt", "A\n")
	if err := os.Remove(filepath.Join(s.view, "b.txt")); err != nil {
		t.Fatal(err)
	}
	cp, err := s.ws.AfterCall(s.ctx, "call-1")
	if err != nil {
		t.Fatalf("AfterCall: %v", err)
	}
	if cp != nil && (cp.CallID != "call-1" || len(cp.HeldChanges()) > 0) {
		t.Errorf("checkpoint %+v: want call-1 with nothing held", cp)
	}
	want := map[string]string{"a.txt": "A\n", "new.txt": "new\n", "dir/c.txt": "c\n"}
	if s.shape.Live() {
		if got := readTree(t, s.src); !equal(got, want) {
			t.Errorf("workspace after the call %v, want %v (shape %s works live)", got, want, s.shape)
		}
	} else if got := readTree(t, s.src); !equal(got, seed) {
		t.Errorf("workspace after the call %v, want it untouched (shape %s)", got, s.shape)
	}
	res := s.finish(t, "")
	if got := changeList(res.Files); got != "a.txt modified, b.txt deleted, new.txt added" {
		t.Errorf("change list %q, want a.txt modified, b.txt deleted, new.txt added", got)
	}
	if !s.shape.Live() {
		if got := readTree(t, s.src); !equal(got, seed) {
			t.Errorf("workspace after Finish %v, want it untouched until apply (shape %s)", got, s.shape)
		}
	}
	s.close(t)
	if s.shape.Live() {
		if got := readTree(t, s.src); !equal(got, want) {
			t.Errorf("workspace after Close %v, want %v", got, want)
		}
	}
}

// testQuiet: a call that changes nothing has no checkpoint, and a session
// that changed nothing has an empty change list.
func testQuiet(t *testing.T, newWS New) {
	s := begin(t, newWS)
	if cp, err := s.ws.AfterCall(s.ctx, "call-1"); err != nil || cp != nil {
		t.Errorf("AfterCall with no change: %+v, %v; want nil, nil", cp, err)
	}
	res := s.finish(t, "")
	if len(res.Files) != 0 || res.Last != nil {
		t.Errorf("Finish with no change: %+v", res)
	}
	s.close(t)
	if got := readTree(t, s.src); !equal(got, seed) {
		t.Errorf("workspace %v, want it untouched", got)
	}
}

// testHeld: on a shape that decides, a host hazard (.envrc) is held: not
// in the workspace, not in the change list, on a checkpoint as held, and
// (decided per call) gone from the sandbox's view; the allowed change
// beside it counts.
func testHeld(t *testing.T, newWS New) {
	s := begin(t, newWS)
	if !s.shape.Decides() {
		s.skip(t, "decides nothing on the host")
	}
	write(t, s.view, ".envrc", "echo pwned\n")
	write(t, s.view, "ok.txt", "ok\n")
	cp, err := s.ws.AfterCall(s.ctx, "call-1")
	if err != nil {
		t.Fatalf("AfterCall: %v", err)
	}
	if cp != nil {
		// Gone from the sandbox's view: no longer listed; a lookup the
		// kernel cached finds an emptied, deleted file at most.
		ents, err := os.ReadDir(s.view)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			if e.Name() == ".envrc" {
				t.Error("held .envrc still listed in the sandbox's view after the call")
			}
		}
		if b, err := os.ReadFile(filepath.Join(s.view, ".envrc")); err == nil && len(b) > 0 {
			t.Errorf("held .envrc still readable in the sandbox's view: %q", b)
		}
	}
	res := s.finish(t, "")
	held := map[string]bool{}
	for _, k := range []*workspace.Checkpoint{cp, res.Last} {
		if k != nil {
			for _, c := range k.HeldChanges() {
				held[c.Path] = true
			}
		}
	}
	if !held[".envrc"] || held["ok.txt"] {
		t.Errorf("held %v: want .envrc alone", held)
	}
	if got := changeList(res.Files); got != "ok.txt added" {
		t.Errorf("change list %q, want ok.txt added alone", got)
	}
	s.close(t)
	if _, err := os.Lstat(filepath.Join(s.src, ".envrc")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("held .envrc reached the workspace (%v)", err)
	}
}

// testLost: a workspace that misses changes (a pull that came short)
// says so in its change list.
func testLost(t *testing.T, newWS New) {
	s := begin(t, newWS)
	write(t, s.view, "new.txt", "new\n")
	if _, err := s.ws.AfterCall(s.ctx, "call-1"); err != nil {
		t.Fatalf("AfterCall: %v", err)
	}
	res := s.finish(t, "the last pull came short")
	if why := audit.Incomplete(res.Files); why == "" {
		t.Errorf("change list %+v: want it incomplete", res.Files)
	}
	if p, ok := s.ws.(workspace.Pender); ok {
		if _, err := p.Pend(true); !errors.Is(err, workspace.ErrIncomplete) {
			t.Errorf("Pend(apply) of an incomplete copy: %v, want ErrIncomplete", err)
		}
		if _, err := os.Lstat(filepath.Join(s.src, "new.txt")); err == nil {
			t.Error("an incomplete copy was applied")
		}
	}
	s.close(t)
}

// testDiscard: a workspace closed without Finish (the session never ran)
// leaves nothing behind and its user's directory as it was.
func testDiscard(t *testing.T, newWS New) {
	s := begin(t, newWS)
	s.stop()
	s.close(t)
	if ents, err := os.ReadDir(s.store); err == nil && len(ents) > 0 {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("the store holds %v after a discarded session", names)
	}
	if got := readTree(t, s.src); !equal(got, seed) {
		t.Errorf("workspace %v, want it untouched", got)
	}
}

// testPend: a copy's changes are applied by Pend(true), its change list
// the final one.
func testPend(t *testing.T, newWS New) {
	s := begin(t, newWS)
	p, ok := s.ws.(workspace.Pender)
	if !ok {
		s.skip(t, "has no Pend power")
	}
	write(t, s.view, "new.txt", "new\n")
	if _, err := s.ws.AfterCall(s.ctx, "call-1"); err != nil {
		t.Fatalf("AfterCall: %v", err)
	}
	s.finish(t, "")
	res, err := p.Pend(true)
	if err != nil {
		t.Fatalf("Pend(apply): %v", err)
	}
	if got := changeList(res.Files); got != "new.txt added" {
		t.Errorf("change list %q, want new.txt added", got)
	}
	s.close(t)
	want := map[string]string{"a.txt": "a\n", "b.txt": "b\n", "dir/c.txt": "c\n", "new.txt": "new\n"}
	if got := readTree(t, s.src); !equal(got, want) {
		t.Errorf("workspace after apply %v, want %v", got, want)
	}
}

// changeList is "path change, ..." sorted by path, directories' own
// entries left out.
func changeList(files []audit.FileChange) string {
	var out []string
	for _, f := range files {
		out = append(out, f.Path+" "+f.Change)
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

func write(t *testing.T, root, rel, content string) {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func writeTree(t *testing.T, root string, files map[string]string) {
	t.Helper()
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	for rel, content := range files {
		write(t, root, rel, content)
	}
}

// readTree is every regular file below root by slash path.
func readTree(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		out[filepath.ToSlash(rel)] = string(b)
		return nil
	})
	if err != nil {
		t.Fatalf("reading %s: %v", root, err)
	}
	return out
}

func equal(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
