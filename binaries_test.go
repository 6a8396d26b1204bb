package agentbox

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestNoCompiledBinaryTracked fails when the repository tracks an executable
// object (ELF): build outputs belong in bin/ or an ignored path, never in git.
func TestNoCompiledBinaryTracked(t *testing.T) {
	out, err := exec.Command("git", "ls-files", "-z").Output()
	if err != nil {
		t.Skipf("not a git checkout (git ls-files: %v)", err)
	}
	magic := []byte("\x7fELF")
	for _, name := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		f, err := os.Open(name)
		if err != nil {
			continue // deleted in the work tree
		}
		head := make([]byte, len(magic))
		n, _ := io.ReadFull(f, head)
		f.Close()
		if bytes.Equal(head[:n], magic) {
			t.Errorf("%s is a compiled binary tracked by git; git rm --cached it and ignore it in .gitignore", name)
		}
	}
}
