package workspace

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// Everyday deletions across calls reach the workspace: directories made,
// grown, recreated, renamed and removed (from a review of a filter that
// held them).

func setOpq(t *testing.T, upper, p string) {
	t.Helper()
	if err := unix.Setxattr(filepath.Join(upper, p), "user.overlay.opaque", []byte("y"), 0); err != nil {
		t.Skip(err)
	}
}

func logCP(t *testing.T, tag string, cp *Checkpoint) {
	for _, c := range changesOf(cp) {
		t.Logf("%s: %s %s %s held=%q %s", tag, c.Path, c.Change, c.Type, c.Held, c.Why)
	}
}

func listUpper(t *testing.T, upper string) {
	filepath.Walk(upper, func(p string, fi os.FileInfo, err error) error {
		if err == nil {
			r, _ := filepath.Rel(upper, p)
			t.Logf("upper: %s %v", r, fi.Mode())
		}
		return nil
	})
}

// rm -rf build && make (build recreated: opaque; build/obj a plain upper
// dir over the workspace's), then rm -rf build.
func TestRebuiltDirRemoved(t *testing.T) {
	for _, modify := range []bool{false, true} {
		t.Run(map[bool]string{false: "identical", true: "rebuilt"}[modify], func(t *testing.T) {
			lower, upper, state := stageDirs(t, map[string]string{"build/obj/a.o": "old-a", "build/obj/b.o": "b", "build/top": "t", "keep.txt": "k"})
			s, err := OpenStage(upper, lower, state, nil)
			if err != nil {
				t.Fatal(err)
			}
			a := "old-a"
			if modify {
				a = "new-a"
			}
			put(t, upper, "build/obj/a.o", a)
			put(t, upper, "build/obj/b.o", "b")
			put(t, upper, "build/top", "t")
			setOpq(t, upper, "build")
			logCP(t, "call-1", mustPromote(t, s, "call-1"))
			if err := os.RemoveAll(filepath.Join(upper, "build")); err != nil {
				t.Fatal(err)
			}
			whiteout(t, upper, "build")
			cp := mustPromote(t, s, "call-2")
			logCP(t, "call-2", cp)
			listUpper(t, upper)
			for _, p := range []string{"build/obj/a.o", "build/obj/b.o", "build/top", "build"} {
				if exists(filepath.Join(lower, p)) {
					t.Errorf("the sandbox removed build; host still has %s", p)
				}
			}
		})
	}
}

// npm ci twice then rm -rf node_modules (pre-existing package dirs).
func TestNpmCiTwiceThenRemoved(t *testing.T) {
	lower, upper, s := newStage(t, map[string]string{"node_modules/foo/lib/x.js": "x", "node_modules/foo/package.json": "1", "package.json": "{}"})
	for call := 0; call < 2; call++ {
		os.RemoveAll(filepath.Join(upper, "node_modules"))
		put(t, upper, "node_modules/foo/lib/x.js", "x")
		put(t, upper, "node_modules/foo/package.json", "2")
		put(t, upper, "node_modules/bar/i.js", "b")
		setOpq(t, upper, "node_modules")
		logCP(t, "ci", mustPromote(t, s, "ci"))
	}
	os.RemoveAll(filepath.Join(upper, "node_modules"))
	whiteout(t, upper, "node_modules")
	cp := mustPromote(t, s, "rm")
	logCP(t, "rm", cp)
	if exists(filepath.Join(lower, "node_modules")) {
		t.Errorf("rm -rf node_modules: host still has node_modules (held: %v)", heldRules(cp))
	}
}

// N made in call 1, more files (and a subdir) in call 2, a file edited in
// call 3, rm -rf N in call 4.
func TestMadeGrownEditedRemoved(t *testing.T) {
	lower, upper, s := newStage(t, map[string]string{"keep.txt": "k"})
	put(t, upper, "N/a", "a")
	put(t, upper, "N/sub/x", "x")
	mustPromote(t, s, "c1")
	put(t, upper, "N/b", "b")
	put(t, upper, "N/sub/y", "y")
	put(t, upper, "N/new/z", "z")
	mustPromote(t, s, "c2")
	put(t, upper, "N/a", "a2")
	put(t, upper, "N/sub/x", "x2")
	if err := os.Chmod(filepath.Join(upper, "N/b"), 0o600); err != nil {
		t.Fatal(err)
	}
	mustPromote(t, s, "c3")
	os.RemoveAll(filepath.Join(upper, "N"))
	whiteout(t, upper, "N")
	cp := mustPromote(t, s, "c4")
	logCP(t, "c4", cp)
	if exists(filepath.Join(lower, "N")) {
		t.Errorf("host still has N (held %v)", heldRules(cp))
	}
}

// mv A B in the sandbox after A was promoted.
func TestRenamedAfterPromotion(t *testing.T) {
	lower, upper, s := newStage(t, map[string]string{"keep.txt": "k"})
	put(t, upper, "A/f", "f")
	put(t, upper, "A/sub/g", "g")
	mustPromote(t, s, "c1")
	put(t, upper, "A/sub/h", "h")
	mustPromote(t, s, "c2")
	if err := os.Rename(filepath.Join(upper, "A"), filepath.Join(upper, "B")); err != nil {
		t.Fatal(err)
	}
	whiteout(t, upper, "A")
	cp := mustPromote(t, s, "c3")
	logCP(t, "c3", cp)
	if exists(filepath.Join(lower, "A")) || !exists(filepath.Join(lower, "B/sub/h")) {
		t.Errorf("A on host: %v, B/sub/h: %v (held %v)", exists(filepath.Join(lower, "A")), exists(filepath.Join(lower, "B/sub/h")), heldRules(cp))
	}
}

// git: objects/ab made in call 1, more objects in call 2, gc in call 3
// (loose dir removed, pack written). Outside the own .git for hazards.
func TestGitObjectsMadeThenRemoved(t *testing.T) {
	lower, upper, s := newStage(t, map[string]string{"repo/objects/pack/old.pack": "p", "keep.txt": "k"})
	put(t, upper, "repo/objects/ab/0001", "o1")
	mustPromote(t, s, "c1")
	put(t, upper, "repo/objects/ab/0002", "o2")
	put(t, upper, "repo/objects/cd/0003", "o3")
	mustPromote(t, s, "c2")
	os.RemoveAll(filepath.Join(upper, "repo/objects/ab"))
	os.RemoveAll(filepath.Join(upper, "repo/objects/cd"))
	whiteout(t, upper, "repo/objects/ab")
	whiteout(t, upper, "repo/objects/cd")
	put(t, upper, "repo/objects/pack/new.pack", "np")
	cp := mustPromote(t, s, "c3")
	logCP(t, "c3", cp)
	for _, p := range []string{"repo/objects/ab", "repo/objects/cd"} {
		if exists(filepath.Join(lower, p)) {
			t.Errorf("host still has %s (held %v)", p, heldRules(cp))
		}
	}
}

// After the held rm -rf, the sandbox sees the workspace's build again
