package workspace

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/audit"
)

// TestPatchQuotesHostileNames: a file named with a terminal escape
// (ESC[2K erases the line) and content full of escapes: the patch has no
// raw ESC outside the content lines, and git apply --check takes it and
// applies it exactly. On the code before, the name went out raw.
func TestPatchQuotesHostileNames(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	oldDir, newDir := t.TempDir(), t.TempDir()
	names := []string{"evil\x1b[2K.txt", "quo\"te\\d.txt", "tab\there\rcr.txt"}
	content := "ok\n\x1b[2K\x1b[1A\rhidden line\n\x07bell\n"
	var changes []audit.FileChange
	for _, n := range names {
		writeFile(t, filepath.Join(newDir, n), content)
		changes = append(changes, audit.FileChange{Path: n, Change: audit.ChangeAdded})
	}
	writeFile(t, filepath.Join(oldDir, names[0]+"old"), "x\n")
	var patch bytes.Buffer
	if err := WritePatch(&patch, oldDir, newDir, changes); err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(patch.String(), "\n") {
		if strings.HasPrefix(line, "+") && !strings.HasPrefix(line, "+++") {
			continue // content: exact, for git apply
		}
		if strings.ContainsAny(line, "\x1b\r\x07") {
			t.Errorf("a raw control character outside the content: %q", line)
		}
	}
	if !strings.Contains(patch.String(), `"a/evil\033[2K.txt"`) {
		t.Errorf("the name is not quoted git's way:\n%q", patch.String())
	}
	for _, args := range [][]string{{"apply", "--check", "-"}, {"apply", "-"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir, cmd.Stdin = oldDir, bytes.NewReader(patch.Bytes())
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s\n%q", args, err, out, patch.String())
		}
	}
	for _, n := range names {
		if b, err := os.ReadFile(filepath.Join(oldDir, n)); err != nil || string(b) != content {
			t.Errorf("%q after git apply: %q %v", n, b, err)
		}
	}
}
