package agent

import (
	"fmt"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/audit"
)

// Generated trees are one entry each with their count; the total is what
// audit.CountFiles says of the same list bounded as session_end keeps it.
func TestFilesChangedGroupsGeneratedTrees(t *testing.T) {
	files := []audit.FileChange{{Path: "a.txt", Change: audit.ChangeAdded}, {Path: "src/main.go", Change: audit.ChangeModified}}
	for i := range 1480 {
		files = append(files, audit.FileChange{Path: fmt.Sprintf(".venv/lib/f%d.py", i), Change: audit.ChangeAdded})
	}
	for i := range 12 {
		files = append(files, audit.FileChange{Path: fmt.Sprintf(".git/objects/%02d/x", i), Change: audit.ChangeAdded})
	}
	files = append(files, audit.FileChange{Path: "web/node_modules/x/i.js", Change: audit.ChangeAdded},
		audit.FileChange{Path: ".git/HEAD", Change: audit.ChangeModified}, audit.FileChange{Path: "my.venv/x", Change: audit.ChangeAdded})
	got := filesChangedLine(files)
	want := "files changed (1,497): a.txt (added), src/main.go (modified), .git/HEAD (modified), my.venv/x (added), .venv/ 1,480 files, .git/objects/ 12 files, web/node_modules/ 1 file"
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	// session_end keeps 1,000 entries and a marker counting the rest.
	bounded := append(append([]audit.FileChange{}, files[:1000]...), audit.FileChange{Path: fmt.Sprintf("…[%d more files not listed]", len(files)-1000), Change: audit.ChangeOmitted})
	if n := audit.CountFiles(bounded); n != 1497 || !strings.Contains(got, "(1,497)") {
		t.Errorf("session_end's list counts %d, the terminal %q", n, got)
	}
	if got := filesChangedLine(nil); got != "" {
		t.Errorf("nothing changed: %q", got)
	}
}
