package fstree

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// A Root never follows a link on the way, not even one that stays inside:
// every operation through d (a link to the real directory real) fails,
// and nothing appears in real or outside.
func TestRootNeverFollowsLinks(t *testing.T) {
	t.Run("openat2", testRootNoFollow)
	t.Run("component-walk", func(t *testing.T) {
		noOpenat2 = true
		defer func() { noOpenat2 = false }()
		testRootNoFollow(t)
	})
}

func testRootNoFollow(t *testing.T) {
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	out := filepath.Join(dir, "out")
	for _, d := range []string{filepath.Join(ws, "real"), out} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(out, "f"), []byte("host"), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, target := range map[string]string{"in": "real", "up": "../out", "abs": out} {
		if err := os.Symlink(target, filepath.Join(ws, name)); err != nil {
			t.Fatal(err)
		}
	}
	r, err := OpenRoot(ws)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, l := range []string{"in", "up", "abs"} {
		p := l + "/f"
		if err := r.MkdirAll(l+"/x", 0o755); !errors.Is(err, ErrLinkInPath) {
			t.Errorf("MkdirAll through %s: %v, want ErrLinkInPath", l, err)
		}
		if f, err := r.OpenFile(p, os.O_WRONLY|os.O_CREATE, 0o644); err == nil {
			f.Close()
			t.Errorf("OpenFile %s went through the link", p)
		}
		if err := r.Symlink("x", p); err == nil {
			t.Errorf("Symlink %s went through the link", p)
		}
		if _, err := r.Stat(p); err == nil {
			t.Errorf("Stat %s went through the link", p)
		}
		if err := r.Remove(p); err == nil {
			t.Errorf("Remove %s went through the link", p)
		}
		if err := r.Chmod(l, 0o777); !errors.Is(err, ErrLinkInPath) {
			t.Errorf("Chmod of the link %s: %v", l, err)
		}
		if _, err := r.Readlink(l); err != nil {
			t.Errorf("Readlink %s: %v", l, err)
		}
	}
	if _, err := r.Stat("../out/f"); err == nil {
		t.Error("Stat with .. succeeded")
	}
	if b, err := os.ReadFile(filepath.Join(out, "f")); err != nil || string(b) != "host" {
		t.Fatalf("the outside file changed: %q %v", b, err)
	}
	if ents, _ := os.ReadDir(filepath.Join(ws, "real")); len(ents) != 0 {
		t.Fatalf("something was written through the inside link: %v", ents)
	}
	if err := r.MkdirAll("a/b/c", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := r.Symlink("../x", "a/b/l"); err != nil {
		t.Fatal(err)
	}
	if err := r.Rename("a/b/l", "a/l2"); err != nil {
		t.Fatal(err)
	}
	if tgt, err := r.Readlink("a/l2"); err != nil || tgt != "../x" {
		t.Fatalf("Readlink a/l2 = %q %v", tgt, err)
	}
}
