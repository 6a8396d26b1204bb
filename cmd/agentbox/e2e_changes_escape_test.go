package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/internal/testutil"
)

// The agent names files; a name with terminal escape sequences (clear the
// screen, set the title, ring the bell) reaches the reviewer's terminal
// escaped in the sessions listing (`agentbox changes`) and in `changes
// --stat`, never raw.
func TestChangesEscapeAgentNames(t *testing.T) {
	testutil.RequireDocker(t)
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	pol, script := filepath.Join(dir, "policy.yaml"), filepath.Join(dir, "s.yaml")
	writeFile(t, pol, allowAll, 0o644)
	writeFile(t, script, `turns:
  - tool_calls:
      - {name: execute_bash, args: {command: "n=$(printf 'evil\\033[2J\\033]0;pwned\\007\\rname.txt'); echo x > \"$n\"; echo y > \"$(printf 'nl\\nx.txt')\"; echo z > 'nl x.txt'"}}
  - content: done
`, 0o644)
	ab := abCmd{fullEnv: baseEnv(t)}
	r := ab.run(t, "run", "--no-memory", "--policy", pol, "--workspace", ws, "--workspace-mode", "copy", "--script", script, "make a file")
	m := sessionRe.FindStringSubmatch(r.stderr)
	if r.code != 0 || m == nil {
		t.Fatalf("run: %d %q", r.code, r.stderr)
	}
	raw := func(what, s string) {
		t.Helper()
		if strings.ContainsAny(s, "\x1b\x07\r") {
			t.Errorf("%s prints a control character raw: %q", what, s)
		}
	}
	list := ab.run(t, "changes")
	if list.code != 0 || !strings.Contains(list.stdout, m[1]) {
		t.Fatalf("changes: %d %q", list.code, list.stdout)
	}
	raw("changes", list.stdout+list.stderr)
	stat := ab.run(t, "changes", "--stat", m[1])
	if stat.code != 0 || !strings.Contains(stat.stdout, "evil") || !strings.Contains(stat.stdout, "name.txt") {
		t.Fatalf("changes --stat: %d %q", stat.code, stat.stdout)
	}
	raw("changes --stat", stat.stdout+stat.stderr)
	// Two names that differ by a newline and a space print apart, the
	// first quoted as git quotes it.
	if !strings.Contains(stat.stdout, `"nl\nx.txt"`) || !strings.Contains(stat.stdout, " nl x.txt ") {
		t.Errorf("changes --stat does not tell nl\\nx.txt from nl x.txt: %q", stat.stdout)
	}
}
