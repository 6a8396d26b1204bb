package main_test

import (
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/internal/testutil"
)

// TestFilesChangedGroupsTrees: a session that commits in a git repository
// and fills a virtual environment past what one record lists: `files
// changed` on the terminal names the files and counts .git/objects/,
// .venv/ and node_modules/ as one entry each, and its total is what the
// session_end record counts (audit.CountFiles) and `audit show` says.
func TestFilesChangedGroupsTrees(t *testing.T) {
	testutil.RequireDocker(t)
	ws, dir := t.TempDir(), t.TempDir()
	for _, args := range [][]string{{"init", "-q"}, {"-c", "user.name=a", "-c", "user.email=a@b", "commit", "-q", "--allow-empty", "-m", "init"}} {
		if out, err := exec.Command("git", append([]string{"-C", ws}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	script := writeFile(t, filepath.Join(dir, "script.yaml"), `turns:
  - tool_calls:
      - {name: execute_bash, args: {command: "mkdir -p .venv/lib web/node_modules/x && seq 1 1100 | split -a 3 -l 1 - .venv/lib/f && echo 1 > web/node_modules/x/i.js && echo hi > a.txt && git add a.txt && git -c user.name=a -c user.email=a@b commit -qm x"}}
  - content: "done"
`, 0o644)
	log := filepath.Join(dir, "audit.jsonl")
	r := agentbox(t, nil, "run", "--no-memory", "--approve", "allow", "--workspace", ws, "--audit", log, "--script", script, "make files")
	if r.code != 0 {
		t.Fatalf("run: %d %s %s", r.code, r.stdout, r.stderr)
	}
	out := r.stdout + r.stderr
	m := regexp.MustCompile(`files changed \(([0-9,]+)\):([^\n]*)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no files changed line:\n%s", out)
	}
	line := m[2]
	for _, want := range []string{" a.txt (added)", ".venv/ 1,100 files", "web/node_modules/ 1 file", ".git/objects/ "} {
		if !strings.Contains(line, want) {
			t.Errorf("files changed lacks %q: %s", want, line)
		}
	}
	if strings.Contains(line, ".venv/lib/") || strings.Contains(line, ".git/objects/0") {
		t.Errorf("files changed lists a generated tree's files one by one: %s", line)
	}
	shown, _ := strconv.Atoi(strings.ReplaceAll(m[1], ",", ""))
	var end *audit.Record
	for _, l := range readAuditLog(t, log) {
		if l.rec.Event == audit.EventSessionEnd {
			end = &l.rec
		}
	}
	if end == nil || len(end.Files) > 1001 || audit.CountFiles(end.Files) != shown || shown < 1100+5 {
		t.Fatalf("the terminal counts %d files, session_end %v", shown, end)
	}
	if s := agentbox(t, nil, "audit", "show", log); !strings.Contains(s.stdout, strconv.Itoa(shown)+" files changed") {
		t.Errorf("audit show does not count %d files:\n%s", shown, s.stdout)
	}
}
