package workspace

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHeldGoneFromCachedView: the sandbox looked a held file and a held
// directory up before they were held (its cache points at their inodes);
// after promotion it can no longer read their content through that cache,
// a descriptor it kept open writes nowhere, new writes through the cache
// reach neither the workspace nor the held copy kept for review, and
// the next promotion finds nothing to promote.
func TestHeldGoneFromCachedView(t *testing.T) {
	lower, upper, state := stageDirs(t, map[string]string{"a.txt": "a"})
	merged := mountKernelOverlay(t, lower, upper)
	s, err := OpenStage(upper, lower, state, nil)
	if err != nil {
		t.Fatal(err)
	}
	sh(t, merged, `echo 'echo pwned' > .envrc && mkdir .vscode && echo '{"tasks":1}' > .vscode/tasks.json`)
	// The sandbox's own lookups, cached before the promotion; a kept descriptor.
	if readOr(filepath.Join(merged, ".envrc")) != "echo pwned\n" || readOr(filepath.Join(merged, ".vscode/tasks.json")) == "" {
		t.Fatal("the sandbox does not see what it wrote")
	}
	kept, err := os.OpenFile(filepath.Join(merged, ".envrc"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer kept.Close()
	cp := mustPromote(t, s, "call-1")
	if h := heldRules(cp); h[".envrc"] == "" || h[".vscode"] == "" {
		t.Fatalf("not held: %v", h)
	}
	heldEnvrc := filepath.Join(state, "held", "1", ".envrc")
	if readOr(heldEnvrc) != "echo pwned\n" || readOr(filepath.Join(state, "held", "1", ".vscode", "tasks.json")) != "{\"tasks\":1}\n" {
		t.Errorf("the held copies for review: %q", readOr(heldEnvrc))
	}
	for _, p := range []string{".envrc", ".vscode/tasks.json"} {
		if got := readOr(filepath.Join(merged, p)); strings.Contains(got, "pwned") || strings.Contains(got, "tasks") {
			t.Errorf("the sandbox still reads held %s: %q", p, got)
		}
	}
	if _, err := kept.WriteString("echo again\n"); err != nil {
		t.Logf("kept descriptor write: %v", err)
	}
	_ = os.WriteFile(filepath.Join(merged, ".envrc"), []byte("echo rewritten\n"), 0o644)
	_ = os.WriteFile(filepath.Join(merged, ".vscode", "new.json"), []byte("x"), 0o644)
	for _, p := range []string{".envrc", ".vscode"} {
		if exists(filepath.Join(lower, p)) {
			t.Errorf("%s reached the workspace", p)
		}
	}
	if got := readOr(heldEnvrc); got != "echo pwned\n" {
		t.Errorf("the sandbox changed the held copy: %q", got)
	}
	if exists(filepath.Join(state, "held", "1", ".vscode", "new.json")) {
		t.Error("the sandbox wrote into the held copy")
	}
	cp2, err := s.Promote("call-2")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range heldOrPromoted(cp2) {
		if strings.HasPrefix(c, ".envrc") || strings.HasPrefix(c, ".vscode") {
			// A rewrite through a fresh lookup is a new change: held again.
			if heldRules(cp2)[c] == "" {
				t.Errorf("call-2 promoted %s", c)
			}
		}
	}
	for _, p := range []string{".envrc", ".vscode"} {
		if exists(filepath.Join(lower, p)) {
			t.Errorf("%s reached the workspace after call-2", p)
		}
	}
}

func heldOrPromoted(cp *Checkpoint) []string {
	if cp == nil {
		return nil
	}
	var out []string
	for _, c := range cp.Changes {
		out = append(out, c.Path)
	}
	return out
}

// TestPromotedNewDirDeletions: a directory new in the sandbox's view is
// promoted; the sandbox then deletes and renames entries in it (the
// overlay, which looked it up with no lower directory, leaves no
// whiteout). The host still sees and promotes the deletions, and a fresh
// mount of the same layers (the kernel's cache dropped) shows exactly
// what the sandbox saw.
func TestPromotedNewDirDeletions(t *testing.T) {
	lower, upper, state := stageDirs(t, map[string]string{"src/old.go": "o"})
	merged := mountKernelOverlay(t, lower, upper)
	s, err := OpenStage(upper, lower, state, nil)
	if err != nil {
		t.Fatal(err)
	}
	sh(t, merged, `mkdir -p d/e src/new && echo x > d/x && echo y > d/y && echo z > d/e/z && echo n > src/new/n && echo m > src/new/m`)
	mustPromote(t, s, "call-1")
	sh(t, merged, `rm d/x && mv d/y d/y2 && rm -r d/e && rm src/new/n`)
	mustPromote(t, s, "call-2")
	want := "d d/y2 src src/new src/new/m src/old.go"
	if got := tree(t, lower); got != want {
		t.Errorf("workspace: %s, want %s", got, want)
	}
	if got := tree(t, merged); got != want {
		t.Errorf("sandbox view: %s, want %s", got, want)
	}
	fresh := mountKernelOverlay(t, lower, upper)
	if got := tree(t, fresh); got != want {
		t.Errorf("a fresh view of the same layers: %s, want %s", got, want)
	}
}

func tree(t *testing.T, root string) string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != root {
			out = append(out, filepath.ToSlash(p[len(root)+1:]))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(out, " ")
}

// TestPromoteReadsOnlyTheUpperLayer: between the listing and the copy,
// the sandbox swaps a staged directory for a symlink to a host directory
// holding a file of the same name: promotion refuses to read through it,
// and the host's file never reaches the workspace.
func TestPromoteReadsOnlyTheUpperLayer(t *testing.T) {
	lower, upper, state := stageDirs(t, map[string]string{"keep": "k"})
	s, err := OpenStage(upper, lower, state, nil)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(upper, "a", "secret"), "staged")
	changes, err := s.List()
	if err != nil {
		t.Fatal(err)
	}
	host := t.TempDir()
	writeFile(t, filepath.Join(host, "secret"), "HOST SECRET")
	if err := os.RemoveAll(filepath.Join(upper, "a")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(host, filepath.Join(upper, "a")); err != nil {
		t.Fatal(err)
	}
	p := rawPromoter(t, s, changes)
	found := false
	for i := range changes {
		if changes[i].Path == "a/secret" {
			found = true
			if err := p.one(&changes[i]); err == nil {
				t.Error("promotion read a/secret through the swapped-in symlink")
			}
		}
	}
	if !found {
		t.Fatalf("a/secret not listed: %+v", changes)
	}
	if got := readOr(filepath.Join(lower, "a", "secret")); strings.Contains(got, "HOST") {
		t.Errorf("the host's file reached the workspace: %q", got)
	}
}
