package workspace

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/agentbox/agentbox/internal/testutil/fsclock"

	"golang.org/x/sys/unix"
)

// Deletions in directories the sandbox recreated (opaque: no whiteout),
// the shapes npm ci and npm uninstall make, and the user's own entries
// there, which the sandbox never sees (found in attacker reviews).

// npm ci shape: rm -rf D && recreate it (opaque, modified), with D/x
// recreated identical to the workspace's (unlisted, never recorded in
// Promoted). The next call deletes D/x: no whiteout (D is opaque); it is
// the workspace's from before D was promoted, so it is the sandbox's
// deletion and the host loses D/x too.
func TestRecreatedDirIdenticalEntryDeletion(t *testing.T) {
	lower, upper, s := newStage(t, map[string]string{"keep.txt": "k", "D/x": "same", "D/y": "old"})
	put(t, upper, "D/x", "same")
	put(t, upper, "D/z", "new")
	if err := unix.Setxattr(filepath.Join(upper, "D"), "user.overlay.opaque", []byte("y"), 0); err != nil {
		t.Skipf("no user xattrs: %v", err)
	}
	cp := mustPromote(t, s, "call-1")
	if exists(filepath.Join(lower, "D/y")) {
		t.Fatalf("D/y not deleted in call 1: %v", heldRules(cp))
	}
	if err := os.Remove(filepath.Join(upper, "D/x")); err != nil {
		t.Fatal(err)
	}
	mustPromote(t, s, "call-2")
	if exists(filepath.Join(lower, "D/x")) {
		t.Errorf("the sandbox deleted D/x (in its opaque D) and the host still has it")
	}
}

// pnpm/npm workspaces: a package directory replaced by a link to the
// workspace's own package.
func TestPnpmLinkReplacesDir(t *testing.T) {
	lower, upper, s := newStage(t, map[string]string{"packages/foo/index.js": "x", "node_modules/foo/index.js": "old", "node_modules/foo/lib/a.js": "a"})
	if err := os.MkdirAll(filepath.Join(upper, "node_modules"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../packages/foo", filepath.Join(upper, "node_modules/foo")); err != nil {
		t.Fatal(err)
	}
	put(t, upper, "node_modules/.bin/x", "")
	os.Remove(filepath.Join(upper, "node_modules/.bin/x"))
	if err := os.Symlink("../foo/index.js", filepath.Join(upper, "node_modules/.bin/foo")); err != nil {
		t.Fatal(err)
	}
	cp := mustPromote(t, s, "c")
	if h := heldRules(cp); len(h) != 0 {
		t.Errorf("held: %v", h)
	}
	if tg, _ := os.Readlink(filepath.Join(lower, "node_modules/foo")); tg != "../packages/foo" {
		t.Errorf("node_modules/foo not promoted")
	}
}

// npm ci three times (node_modules recreated, opaque), then npm
// uninstall of each package: the packages' deletions reach the host.
func TestNpmCiTwiceThenUninstall(t *testing.T) {
	lower, upper, state := stageDirs(t, map[string]string{"node_modules/foo/cli.js": "c", "package.json": "{}"})
	if err := os.MkdirAll(filepath.Join(lower, "node_modules/.bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../foo/cli.js", filepath.Join(lower, "node_modules/.bin/foo")); err != nil {
		t.Fatal(err)
	}
	fsclock.Tick(t, filepath.Dir(lower))
	s, err := OpenStage(upper, lower, state, nil)
	if err != nil {
		t.Fatal(err)
	}
	for call := 0; call < 3; call++ {
		os.RemoveAll(filepath.Join(upper, "node_modules"))
		put(t, upper, "node_modules/foo/cli.js", "c")
		put(t, upper, "node_modules/bar/cli.js", "b")
		if err := unix.Setxattr(filepath.Join(upper, "node_modules"), "user.overlay.opaque", []byte("y"), 0); err != nil {
			t.Skip(err)
		}
		os.MkdirAll(filepath.Join(upper, "node_modules/.bin"), 0o755)
		os.Symlink("../foo/cli.js", filepath.Join(upper, "node_modules/.bin/foo"))
		os.Symlink("../bar/cli.js", filepath.Join(upper, "node_modules/.bin/bar"))
		cp := mustPromote(t, s, "c")
		for _, c := range changesOf(cp) {
			t.Logf("call %d: %s %s %s %q", call, c.Path, c.Change, c.Type, c.Held)
		}
		if h := heldRules(cp); len(h) != 0 {
			t.Errorf("call %d held: %v", call, h)
		}
	}
	// now uninstall bar
	os.RemoveAll(filepath.Join(upper, "node_modules/bar"))
	os.Remove(filepath.Join(upper, "node_modules/.bin/bar"))
	cp := mustPromote(t, s, "c")
	for _, c := range changesOf(cp) {
		t.Logf("uninstall: %s %s %s %q", c.Path, c.Change, c.Type, c.Held)
	}
	if h := heldRules(cp); len(h) != 0 {
		t.Errorf("uninstall held: %v", h)
	}
	// node_modules/.bin is a plain directory below the opaque
	// node_modules, over the workspace's .bin: a deletion in it leaves no
	// whiteout, and is found because .bin was recorded sealed (hidden)
	// when npm ci recreated node_modules.
	for _, p := range []string{"node_modules/bar/cli.js", "node_modules/.bin/bar"} {
		if exists(filepath.Join(lower, p)) {
			t.Errorf("uninstall: host still has %s", p)
		}
	}
	// uninstall foo (which was identical to the workspace's)
	os.RemoveAll(filepath.Join(upper, "node_modules/foo"))
	os.Remove(filepath.Join(upper, "node_modules/.bin/foo"))
	mustPromote(t, s, "c")
	for _, p := range []string{"node_modules/foo/cli.js", "node_modules/.bin/foo"} {
		if exists(filepath.Join(lower, p)) {
			t.Errorf("uninstall foo: host still has %s", p)
		}
	}
}

func changesOf(cp *Checkpoint) []StagedChange {
	if cp == nil {
		return nil
	}
	return cp.Changes
}

// The sandbox made N (promoted: opaque, it never sees the workspace's
// entries there again). The user adds N/B/notes.txt on the host. The
// sandbox then writes N/B/f (mkdir -p N/B: a new upper dir under opaque N,
// over the user's B). The user's notes are neither deleted nor held.
func TestUserDirBelowSandboxDirStays(t *testing.T) {
	lower, upper, s := newStage(t, map[string]string{"keep.txt": "k"})
	put(t, upper, "N/a", "a")
	mustPromote(t, s, "call-1")
	put(t, lower, "N/B/notes.txt", "user")
	put(t, upper, "N/B/f", "f")
	cp := mustPromote(t, s, "call-2")
	for _, c := range changesOf(cp) {
		t.Logf("%s %s %s held=%q %s", c.Path, c.Change, c.Type, c.Held, c.Why)
		if c.Path == "N/B/notes.txt" {
			t.Errorf("the user's N/B/notes.txt listed as %s (held %q)", c.Change, c.Held)
		}
	}
	if !exists(filepath.Join(lower, "N/B/notes.txt")) {
		t.Errorf("the user's N/B/notes.txt was deleted")
	}
}

// Same, the user's directory moved in from elsewhere (its files older
// than the session: no conflict to catch them).
func TestUserMovedDirBelowSandboxDirStays(t *testing.T) {
	old := t.TempDir()
	put(t, old, "B/notes.txt", "user")
	fsclock.Tick(t, old)
	lower, upper, s := newStage(t, map[string]string{"keep.txt": "k"})
	put(t, upper, "N/a", "a")
	mustPromote(t, s, "call-1")
	if err := os.Rename(filepath.Join(old, "B"), filepath.Join(lower, "N/B")); err != nil {
		t.Fatal(err)
	}
	put(t, upper, "N/B/f", "f")
	cp := mustPromote(t, s, "call-2")
	for _, c := range changesOf(cp) {
		t.Logf("%s %s %s held=%q %s", c.Path, c.Change, c.Type, c.Held, c.Why)
	}
	if !exists(filepath.Join(lower, "N/B/notes.txt")) {
		t.Errorf("the user's N/B/notes.txt was deleted")
	}
}

// The user replaces the promoted opaque directory D on the host with an
// older directory of theirs (mv; its files keep their old ctimes). The
// sandbox (which sees only its own D) then writes D/z. The user's files
// are not the sandbox's deletions.
func TestHostReplacedOpaqueDirStays(t *testing.T) {
	old := t.TempDir()
	put(t, old, "D/mine.txt", "user")
	fsclock.Tick(t, old)
	lower, upper, s := newStage(t, map[string]string{"keep.txt": "k"})
	put(t, upper, "D/a", "a")
	mustPromote(t, s, "call-1")
	if err := os.Rename(filepath.Join(lower, "D"), filepath.Join(old, "D.sandbox")); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(old, "D"), filepath.Join(lower, "D")); err != nil {
		t.Fatal(err)
	}
	put(t, upper, "D/z", "z")
	cp := mustPromote(t, s, "call-2")
	for _, c := range changesOf(cp) {
		t.Logf("%s %s %s held=%q %s", c.Path, c.Change, c.Type, c.Held, c.Why)
	}
	if !exists(filepath.Join(lower, "D/mine.txt")) {
		t.Errorf("the user's D/mine.txt was deleted")
	}
}

// chmod of a promoted opaque directory: the user's host additions in it
// (never seen by the sandbox) stay.
func TestChmodOpaqueDirKeepsUserEntries(t *testing.T) {
	lower, upper, s := newStage(t, map[string]string{"keep.txt": "k"})
	put(t, upper, "N/a", "a")
	mustPromote(t, s, "call-1")
	put(t, lower, "N/notes.txt", "user")
	if err := os.Chmod(filepath.Join(upper, "N"), 0o700); err != nil {
		t.Fatal(err)
	}
	cp := mustPromote(t, s, "call-2")
	for _, c := range changesOf(cp) {
		t.Logf("%s %s %s held=%q %s", c.Path, c.Change, c.Type, c.Held, c.Why)
	}
	if !exists(filepath.Join(lower, "N/notes.txt")) {
		t.Errorf("the user's N/notes.txt was deleted")
	}
}

// npm ci with an upgraded package (the promoter writes into the
// workspace's node_modules/foo, moving its ctime past node_modules'
// record), then npm uninstall foo: the directory, never recorded (a
// plain directory below the opaque node_modules), is the sandbox's to
// delete by its birth, not its ctime.
func TestUpgradedPackageDirUninstalled(t *testing.T) {
	lower, upper, s := newStage(t, map[string]string{"node_modules/foo/cli.js": "c", "node_modules/foo/lib/x.js": "x", "package.json": "{}"})
	put(t, upper, "node_modules/foo/cli.js", "c2")
	put(t, upper, "node_modules/foo/lib/x.js", "x")
	if err := unix.Setxattr(filepath.Join(upper, "node_modules"), "user.overlay.opaque", []byte("y"), 0); err != nil {
		t.Skip(err)
	}
	mustPromote(t, s, "call-1")
	if err := os.RemoveAll(filepath.Join(upper, "node_modules", "foo")); err != nil { // no whiteout: its parent is opaque
		t.Fatal(err)
	}
	mustPromote(t, s, "call-2")
	if exists(filepath.Join(lower, "node_modules", "foo")) {
		t.Errorf("npm uninstall foo: the workspace still has node_modules/foo")
	}
}

// A directory recreated with every entry the same as the workspace's (no
// removal in it, so its recorded ctime is its newest entry's), then that
// newest entry deleted: the deletion reaches the workspace.
func TestRecreatedDirNewestEntryDeleted(t *testing.T) {
	lower, upper, s := newStage(t, map[string]string{"build/a": "a", "build/b": "b"})
	put(t, upper, "build/a", "a")
	put(t, upper, "build/b", "b")
	put(t, upper, "build/c", "c")
	if err := unix.Setxattr(filepath.Join(upper, "build"), "user.overlay.opaque", []byte("y"), 0); err != nil {
		t.Skip(err)
	}
	mustPromote(t, s, "call-1")
	for _, name := range []string{"a", "b"} {
		if err := os.Remove(filepath.Join(upper, "build", name)); err != nil {
			t.Fatal(err)
		}
	}
	mustPromote(t, s, "call-2")
	for _, name := range []string{"a", "b"} {
		if exists(filepath.Join(lower, "build", name)) {
			t.Errorf("build/%s deleted in the sandbox: the workspace still has it", name)
		}
	}
}
