package workspace

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/internal/testutil/fsclock"
)

// Through a real kernel overlay (the kernel decides what leaves a
// whiteout and what is opaque): npm ci recreates node_modules twice, then
// npm uninstall removes a package and its node_modules/.bin link; the
// deletions reach the workspace, and the sandbox's view and the
// workspace's agree.
func TestNpmUninstallBinThroughKernelOverlay(t *testing.T) {
	lower, upper, state := stageDirs(t, map[string]string{"package.json": "{}", "node_modules/foo/cli.js": "f", "node_modules/bar/cli.js": "b"})
	for _, l := range []string{"foo", "bar"} {
		if err := os.MkdirAll(filepath.Join(lower, "node_modules/.bin"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("../"+l+"/cli.js", filepath.Join(lower, "node_modules/.bin", l)); err != nil {
			t.Fatal(err)
		}
	}
	fsclock.Tick(t, filepath.Dir(lower))
	merged := mountKernelOverlay(t, lower, upper)
	s, err := OpenStage(upper, lower, state, nil)
	if err != nil {
		t.Fatal(err)
	}
	ci := `rm -rf node_modules && mkdir -p node_modules/foo node_modules/bar node_modules/.bin && echo f > node_modules/foo/cli.js && echo b > node_modules/bar/cli.js && ln -s ../foo/cli.js node_modules/.bin/foo && ln -s ../bar/cli.js node_modules/.bin/bar`
	for i := range 2 {
		sh(t, merged, ci)
		if h := heldRules(mustPromote(t, s, "ci")); len(h) != 0 {
			t.Fatalf("npm ci %d held: %v", i, h)
		}
	}
	sh(t, merged, `rm -rf node_modules/bar node_modules/.bin/bar`)
	if h := heldRules(mustPromote(t, s, "uninstall")); len(h) != 0 {
		t.Fatalf("npm uninstall held: %v", h)
	}
	for _, p := range []string{"node_modules/bar", "node_modules/.bin/bar"} {
		if exists(filepath.Join(lower, p)) {
			t.Errorf("npm uninstall bar: the workspace still has %s", p)
		}
	}
	for _, p := range []string{"node_modules/foo/cli.js", "node_modules/.bin/foo"} {
		if !exists(filepath.Join(lower, p)) || !exists(filepath.Join(merged, p)) {
			t.Errorf("%s: workspace %v, sandbox %v", p, exists(filepath.Join(lower, p)), exists(filepath.Join(merged, p)))
		}
	}
}

// Through a real kernel overlay: the sandbox makes N; the user moves an
// old directory of theirs into N on the host; the sandbox (which cannot
// see it) writes a file of the same name into it, then removes N. The
// user's files are never overwritten or deleted, and the call says why.
func TestMovedInDirThroughKernelOverlay(t *testing.T) {
	old := t.TempDir()
	put(t, old, "B/notes.txt", "user")
	fsclock.Tick(t, old)
	lower, _, merged, s := overlayStage(t, map[string]string{"keep.txt": "k"})
	sh(t, merged, `mkdir -p N && echo a > N/a`)
	mustPromote(t, s, "make")
	if err := os.Rename(filepath.Join(old, "B"), filepath.Join(lower, "N/B")); err != nil {
		t.Fatal(err)
	}
	sh(t, merged, `mkdir -p N/B && echo sandbox > N/B/notes.txt`)
	cp := mustPromote(t, s, "write")
	if got := readOr(filepath.Join(lower, "N/B/notes.txt")); got != "user" {
		t.Errorf("the user's N/B/notes.txt is now %q", got)
	}
	if why := heldWhy(cp, "N/B/notes.txt"); !strings.Contains(why, "never saw") {
		t.Errorf("the write into the user's N/B is not held as unseen: %q", why)
	}
	sh(t, merged, `rm -rf N`)
	cp = mustPromote(t, s, "remove")
	if got := readOr(filepath.Join(lower, "N/B/notes.txt")); got != "user" {
		t.Errorf("after rm -rf N, the user's N/B/notes.txt is %q", got)
	}
	if exists(filepath.Join(lower, "N/a")) {
		t.Errorf("the sandbox removed N; the workspace still has its N/a")
	}
	if why := heldWhy(cp, "N/B"); !strings.Contains(why, "never saw") {
		t.Errorf("rm -rf N: the user's N/B not held as unseen: %q", why)
	}
}

func heldWhy(cp *Checkpoint, p string) string {
	for _, c := range changesOf(cp) {
		if c.Path == p && c.Held != "" {
			return c.Why
		}
	}
	return ""
}
