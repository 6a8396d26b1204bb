package agentbox

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// sharedDesign finds the contract beside the checkout: shared/DESIGN.md in
// the repository root's parent directory or above it (../shared for a
// checkout, ../../shared for a worktree under it). "" when there is none, as
// in a fresh clone.
func sharedDesign(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for dir := filepath.Dir(wd); ; dir = filepath.Dir(dir) {
		p := filepath.Join(dir, "shared", "DESIGN.md")
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			return p
		}
		if filepath.Dir(dir) == dir {
			return ""
		}
	}
}

// TestDesignCopyIsCurrent fails when the design document beside the checkout
// differs from the repository's copy in docs/DESIGN.md, which the code's
// comments cite: copy it over (cp ../shared/DESIGN.md docs/) and commit.
func TestDesignCopyIsCurrent(t *testing.T) {
	own, err := os.ReadFile(filepath.Join("docs", "DESIGN.md"))
	if err != nil {
		t.Fatalf("docs/DESIGN.md, which the code's comments cite, must be in the repository: %v", err)
	}
	shared := sharedDesign(t)
	if shared == "" {
		t.Skip("no shared/DESIGN.md beside the checkout; the repository's copy is used as is")
	}
	want, err := os.ReadFile(shared)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(own, want) {
		t.Fatalf("docs/DESIGN.md differs from %s; copy it over: cp %s docs/DESIGN.md", shared, shared)
	}
}
