package workspace

import (
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/agentbox/agentbox/internal/testutil/fsclock"

	"golang.org/x/sys/unix"
)

// The link check judges the view the host has after promotion, for the
// everyday shapes (nothing held wrongly) and for the workspace's own
// entries the sandbox cannot see (found in review of the listing-based
// view).

func heldOf(out []StagedChange) map[string]string {
	m := map[string]string{}
	for _, c := range out {
		if c.Held != "" {
			m[c.Path] = c.Held + ": " + c.Why
		}
	}
	return m
}

// Directories made in one call (promoted, marked opaque), a link added
// inside them in the next: never held.
func TestLinkInPromotedNestedDir(t *testing.T) {
	_, upper, s := newStage(t, map[string]string{"keep.txt": "k"})
	put(t, upper, "src/lib/f.js", "x")
	mustPromote(t, s, "call-1")
	if err := os.Symlink("f.js", filepath.Join(upper, "src/lib/l.js")); err != nil {
		t.Fatal(err)
	}
	out, err := s.List()
	if err != nil {
		t.Fatal(err)
	}
	if h := heldOf(out); len(h) != 0 {
		t.Errorf("held: %v", h)
	}
}

// rm -rf D && mkdir -p D/sub && ln -s f D/sub/l (npm install's shape:
// D opaque, D/sub a plain directory like the workspace's): never held.
func TestLinkInRecreatedDir(t *testing.T) {
	_, upper, s := newStage(t, map[string]string{"D/sub/old": "o", "D/sub/f": "f"})
	put(t, upper, "D/sub/f", "new")
	if err := unix.Setxattr(filepath.Join(upper, "D"), "user.overlay.opaque", []byte("y"), 0); err != nil {
		t.Skipf("no user xattrs here: %v", err)
	}
	if err := os.Symlink("f", filepath.Join(upper, "D/sub/l")); err != nil {
		t.Fatal(err)
	}
	out, err := s.List()
	if err != nil {
		t.Fatal(err)
	}
	for path, why := range heldOf(out) {
		if path == "D/sub/l" {
			t.Errorf("D/sub/l -> f held: %s", why)
		}
	}
}

// A promoted directory N (opaque: the sandbox does not see what the user
// adds to it on the host); the user adds N/evil -> outside, the sandbox
// q -> N/evil/secret: on the host q resolves through N/evil, so q is held.
func TestLinkThroughUserEntryInPromotedDir(t *testing.T) {
	outside := t.TempDir()
	lower, upper, s := newStage(t, map[string]string{"keep.txt": "k"})
	put(t, upper, "N/a", "a")
	mustPromote(t, s, "call-1")
	if err := os.Symlink(outside, filepath.Join(lower, "N", "evil")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("N/evil/secret", filepath.Join(upper, "q")); err != nil {
		t.Fatal(err)
	}
	out, err := s.List()
	if err != nil {
		t.Fatal(err)
	}
	if heldOf(out)["q"] == "" {
		t.Errorf("q -> N/evil/secret promoted; on the host N/evil -> %s", outside)
	}
}

// A kept writer appends to a listed file after the listing; a new link
// to it is judged by what is promoted (a file): not held.
func TestLinkToFileBeingWritten(t *testing.T) {
	_, upper, s := newStage(t, map[string]string{"keep.txt": "k"})
	put(t, upper, "app.log", "line1\n")
	if err := os.Symlink("app.log", filepath.Join(upper, "current.log")); err != nil {
		t.Fatal(err)
	}
	out := listWithHooks(t, s, nil, func() {
		f, err := os.OpenFile(filepath.Join(upper, "app.log"), os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteString("line2\n"); err != nil {
			t.Fatal(err)
		}
	})
	if h := heldOf(out); len(h) != 0 {
		t.Errorf("held: %v", h)
	}
}

// The user adds a directory and a file on the host inside a directory
// the sandbox made (promoted, opaque: the sandbox never sees them); the
// sandbox's next call changes something else. Neither is a deletion.
func TestUserEntriesInPromotedDirStay(t *testing.T) {
	lower, upper, s := newStage(t, map[string]string{"keep.txt": "k"})
	put(t, upper, "N/a", "a")
	mustPromote(t, s, "call-1")
	if err := os.Mkdir(filepath.Join(lower, "N", "out"), 0o755); err != nil {
		t.Fatal(err)
	}
	put(t, lower, "N/notes.txt", "user")
	put(t, upper, "other.txt", "o")
	// The sandbox writes into N too: its mtime and ctime move.
	put(t, upper, "N/b", "b")
	cp := mustPromote(t, s, "call-2")
	for _, c := range cp.Changes {
		if c.Path == "N/out" || c.Path == "N/notes.txt" {
			t.Errorf("the user's %s listed as %s (held %q)", c.Path, c.Change, c.Held)
		}
	}
	for _, p := range []string{"N/out", "N/notes.txt", "N/a", "N/b", "other.txt"} {
		if !exists(filepath.Join(lower, p)) {
			t.Errorf("%s missing from the workspace", p)
		}
	}
}

// A real copy (its tree is the whole view): the workspace's own link
// X -> outside is in the tree unchanged; the sandbox adds q -> X/secret
// (held) and sub/l -> f (not).
func TestTreeModeLinkView(t *testing.T) {
	for _, via := range []string{"HoldPulled", "Hazards"} {
		outside := t.TempDir()
		src := filepath.Join(t.TempDir(), "ws")
		put(t, src, "sub/f", "f")
		if err := os.Symlink(outside, filepath.Join(src, "X")); err != nil {
			t.Fatal(err)
		}
		fsclock.Tick(t, src)
		store := Store{Dir: filepath.Join(t.TempDir(), "state", "work")}
		cp, err := NewCopy(store, src, CopyOptions{Session: "0123456789abcdef0124", NoOverlay: true, NoOverlayWhy: "test"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cp.Remove() })
		tree := cp.Tree()
		if err := os.Symlink("X/secret", filepath.Join(tree, "q")); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("f", filepath.Join(tree, "sub", "l")); err != nil {
			t.Fatal(err)
		}
		rules := map[string]string{}
		if via == "HoldPulled" {
			held, err := cp.HoldPulled("end", nil)
			if err != nil {
				t.Fatal(err)
			}
			rules = heldRules(held)
		} else {
			if _, err := cp.Finish(); err != nil {
				t.Fatal(err)
			}
			hz, err := cp.Hazards()
			if err != nil {
				t.Fatal(err)
			}
			for _, h := range hz {
				rules[h.Path] = h.Held + " " + h.Why
			}
		}
		if rules["q"] == "" {
			t.Errorf("%s: q -> X/secret not held; the workspace's X -> %s", via, outside)
		}
		if rules["sub/l"] != "" {
			t.Errorf("%s: sub/l -> f held: %s", via, rules["sub/l"])
		}
	}
}

// The workspace has the user's Y -> outside; the sandbox makes Y a file
// and q -> Y/secret while a kept process flips Y between a file and a
// directory. Listed as a file, Y lets q through, and its copy may then
// fail (no longer a regular file): a link is promoted after the files,
// and held when an entry its resolution passed through was not promoted.
func TestLinkThroughEntryThatFailsToPromote(t *testing.T) {
	for attempt := 0; attempt < 200; attempt++ {
		outside, lower, upper, s := stageWithLinkOut(t, map[string]string{"keep.txt": "k"}, "Y")
		put(t, upper, "Y", "x")
		if err := os.Mkdir(filepath.Join(upper, "Z"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("Y/secret", filepath.Join(upper, "q")); err != nil {
			t.Fatal(err)
		}
		var stop atomic.Bool
		done := make(chan struct{})
		go func() {
			defer close(done)
			for !stop.Load() {
				_ = unix.Renameat2(unix.AT_FDCWD, filepath.Join(upper, "Y"), unix.AT_FDCWD, filepath.Join(upper, "Z"), unix.RENAME_EXCHANGE)
			}
		}()
		cp, err := s.Promote("c")
		stop.Store(true)
		<-done
		if err != nil {
			continue // the listing failed: nothing promoted
		}
		fi, _ := os.Lstat(filepath.Join(lower, "Y"))
		if exists(filepath.Join(lower, "q")) && fi != nil && fi.Mode()&os.ModeSymlink != 0 {
			t.Fatalf("attempt %d: q -> Y/secret promoted while the workspace's Y is still the link to %s (held: %v)", attempt, outside, heldRules(cp))
		}
	}
}

// A directory the sandbox made is promoted and marked opaque (its ctime
// moves with the mark): the next listing, with N untouched, does not
// compare N with the workspace again (the recorded stamp is the marked
// one); once the sandbox deletes in N, it does.
func TestPromotedDirNotRescanned(t *testing.T) {
	_, upper, s := newStage(t, map[string]string{"keep.txt": "k"})
	put(t, upper, "N/a", "a")
	mustPromote(t, s, "call-1")
	if _, err := unix.Lgetxattr(filepath.Join(upper, "N"), "user.overlay.opaque", make([]byte, 8)); err != nil {
		t.Skipf("the promoted directory is not marked opaque here (%v)", err)
	}
	if _, err := s.List(); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.dirs["N"]; ok {
		t.Errorf("N, untouched since its promotion, compared with the workspace again")
	}
	if err := os.Remove(filepath.Join(upper, "N", "a")); err != nil {
		t.Fatal(err)
	}
	out, err := s.List()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := s.dirs["N"]; !ok || len(out) != 1 || out[0].Path != "N/a" || out[0].Change != "deleted" {
		t.Errorf("after the sandbox deleted N/a: %+v (compared: %v)", out, ok)
	}
}
