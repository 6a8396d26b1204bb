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
	ab, session := hostileCopySession(t, baseEnv(t), `n=$(printf 'evil\\033[2J\\033]0;pwned\\007\\rname.txt'); echo x > \"$n\"; echo y > \"$(printf 'nl\\nx.txt')\"; echo z > 'nl x.txt'`)
	raw := func(what, s string) {
		t.Helper()
		if strings.ContainsAny(s, "\x1b\x07\r") {
			t.Errorf("%s prints a control character raw: %q", what, s)
		}
	}
	list := ab.run(t, "changes")
	if list.code != 0 || !strings.Contains(list.stdout, session) {
		t.Fatalf("changes: %d %q", list.code, list.stdout)
	}
	raw("changes", list.stdout+list.stderr)
	stat := ab.run(t, "changes", "--stat", session)
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

// The agent writes file contents too: `agentbox changes SESSION` piped
// (into less -R, say) shows a file holding a clear-screen sequence, a
// bell, a carriage return and an OSC title escaped, never raw, and says
// where the exact patch is; that file holds the bytes as written.
func TestChangesEscapeContentOnAPipe(t *testing.T) {
	env, store := stageEnv(t)
	ab, session := hostileCopySession(t, env, `printf 'top\\033[2J\\033[H\\nbell\\007\\nback\\rover\\n\\033]0;pwned\\007title\\n' > evil.txt`)
	d := ab.run(t, "changes", session) // stdout and stderr are pipes
	if d.code != 0 || !strings.Contains(d.stdout, "+++ b/evil.txt") {
		t.Fatalf("changes: %d %q %q", d.code, d.stdout, d.stderr)
	}
	if strings.ContainsAny(d.stdout+d.stderr, "\x1b\x07\r") {
		t.Errorf("changes prints a control character raw on a pipe: %q", d.stdout)
	}
	for _, want := range []string{`+top\x1b[2J\x1b[H`, `+bell\x07`, `+back\x0dover`, `+\x1b]0;pwned\x07title`} {
		if !strings.Contains(d.stdout, want) {
			t.Errorf("changes does not show %s: %q", want, d.stdout)
		}
	}
	exact := filepath.Join(store, session, "changes.patch")
	if !strings.Contains(d.stderr, exact) || !strings.Contains(d.stderr, "control characters escaped") {
		t.Errorf("changes does not name the exact patch %s: %q", exact, d.stderr)
	}
	b, err := os.ReadFile(exact)
	if err != nil || !strings.Contains(string(b), "+top\x1b[2J\x1b[H\n+bell\x07\n+back\rover\n+\x1b]0;pwned\x07title\n") {
		t.Errorf("the exact patch: %v %q", err, b)
	}
}

// hostileCopySession runs one copy-mode session under allowAll whose one
// call is command (a YAML double-quoted string's body), with env; it
// returns the binary's runner and the session.
func hostileCopySession(t *testing.T, env []string, command string) (abCmd, string) {
	t.Helper()
	testutil.RequireDocker(t)
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	pol, script := filepath.Join(dir, "policy.yaml"), filepath.Join(dir, "s.yaml")
	writeFile(t, pol, allowAll, 0o644)
	writeFile(t, script, "turns:\n  - tool_calls:\n      - {name: execute_bash, args: {command: \""+command+"\"}}\n  - content: done\n", 0o644)
	ab := abCmd{fullEnv: env}
	r := ab.run(t, "run", "--no-memory", "--policy", pol, "--workspace", ws, "--workspace-mode", "copy", "--script", script, "write files")
	m := sessionRe.FindStringSubmatch(r.stderr)
	if r.code != 0 || m == nil {
		t.Fatalf("run: %d %q", r.code, r.stderr)
	}
	return ab, m[1]
}
