package workspace

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/internal/testutil/treestate"
)

// TestPatchAppliesWithGit: the unified diff of random edits, applied by
// git apply to the old tree, gives the new tree (modes and symlinks too).
func TestPatchAppliesWithGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	r := rand.New(rand.NewPCG(1, 2))
	oldDir, newDir := t.TempDir(), t.TempDir()
	var changes []audit.FileChange
	for i := range 40 {
		var a []string
		for j := range r.IntN(60) {
			a = append(a, fmt.Sprintf("line %d\n", j%7))
		}
		b := append([]string(nil), a...)
		for range r.IntN(8) {
			k := r.IntN(len(b) + 1)
			switch r.IntN(3) {
			case 0:
				b = append(b[:k], append([]string{fmt.Sprintf("new %d\n", r.IntN(5))}, b[k:]...)...)
			case 1:
				if k < len(b) {
					b = append(b[:k], b[k+1:]...)
				}
			default:
				if k < len(b) {
					b[k] = "changed\n"
				}
			}
		}
		name := fmt.Sprintf("f%02d.txt", i)
		oldText, newText := strings.Join(a, ""), strings.Join(b, "")
		if i%5 == 0 {
			newText = strings.TrimSuffix(newText, "\n") // no newline at the end
		}
		writeFile(t, filepath.Join(oldDir, name), oldText)
		writeFile(t, filepath.Join(newDir, name), newText)
		changes = append(changes, audit.FileChange{Path: name, Change: audit.ChangeModified})
	}
	writeFile(t, filepath.Join(newDir, "added.txt"), "hello\n")
	writeFile(t, filepath.Join(oldDir, "deleted.txt"), "bye\n")
	writeFile(t, filepath.Join(oldDir, "run.sh"), "#!/bin/sh\n")
	writeFile(t, filepath.Join(newDir, "run.sh"), "#!/bin/sh\n")
	_ = os.Chmod(filepath.Join(newDir, "run.sh"), 0o755)
	_ = os.Symlink("added.txt", filepath.Join(newDir, "link"))
	changes = append(changes, audit.FileChange{Path: "added.txt", Change: audit.ChangeAdded},
		audit.FileChange{Path: "deleted.txt", Change: audit.ChangeDeleted},
		audit.FileChange{Path: "run.sh", Change: ChangeMode},
		audit.FileChange{Path: "link", Change: audit.ChangeAdded})
	var patch bytes.Buffer
	if err := WritePatch(&patch, oldDir, newDir, changes); err != nil {
		t.Fatal(err)
	}
	text := patch.String()
	cmd := exec.Command("git", "apply", "--unsafe-paths", "-")
	cmd.Dir, cmd.Stdin = oldDir, strings.NewReader(text)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git apply: %v %s\n%s", err, out, text)
	}
	if got, want := treestate.Of(t, oldDir), treestate.Of(t, newDir); len(got) != len(want) {
		t.Fatalf("trees differ: %v\n%v", got, want)
	} else {
		for k, v := range want {
			if k == "." {
				continue
			}
			if g := got[k]; stripTime(g) != stripTime(v) {
				t.Errorf("%s: %q, want %q", k, g, v)
			}
		}
	}
}

func stripTime(s string) string {
	if i := strings.LastIndex(s, " "); i > 0 && strings.Count(s, " ") > 2 {
		f := strings.Fields(s)
		return f[0] + " " + f[1]
	}
	return s
}
