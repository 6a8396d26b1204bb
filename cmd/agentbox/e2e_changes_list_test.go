package main_test

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/internal/testutil"
)

// `agentbox changes` lists rw sessions with what they promoted and held
// (an rw session that did neither only with --all, as an empty copy), and
// a copy's held changes beside its pending ones; --all counts every kept
// session, rw ones too (not CHANGES 0 for a session that promoted files).
func TestChangesListsRWSessions(t *testing.T) {
	testutil.RequireDocker(t)
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	writeTestFile(t, filepath.Join(ws, "keep.txt"), "k\n")
	pol := filepath.Join(dir, "policy.yaml")
	writeTestFile(t, pol, allowAll)
	ab := abCmd{fullEnv: baseEnv(t)}
	session := func(r result) string {
		t.Helper()
		if r.code != 0 {
			t.Fatalf("session: %d %q %q", r.code, r.stdout, r.stderr)
		}
		return sessionOf(t, r.stderr)
	}
	// rw: two files promoted, .envrc (runs on the host) held.
	rw := session(ab.run(t, "exec", "--workspace", ws, "--policy", pol, "--", "echo a > a.txt; echo b > b.txt; echo x > .envrc"))
	// rw that changed nothing.
	idle := session(ab.run(t, "exec", "--workspace", ws, "--policy", pol, "--", "true"))
	// copy: one pending change, .envrc held from the copy.
	script := filepath.Join(dir, "s.yaml")
	writeTestFile(t, script, `turns:
  - tool_calls:
      - {name: execute_bash, args: {command: "echo c > c.txt; echo y > .envrc"}}
  - content: done
`)
	cp := session(ab.run(t, "run", "--no-memory", "--policy", pol, "--workspace", ws, "--workspace-mode", "copy", "--script", script, "write"))

	row := func(sess, state, count string) *regexp.Regexp {
		return regexp.MustCompile(`(?m)^` + sess + ` +` + state + ` +` + regexp.QuoteMeta(count) + ` +overlay `)
	}
	ls := ab.run(t, "changes")
	if ls.code != 0 {
		t.Fatalf("changes: %d %q", ls.code, ls.stderr)
	}
	if !row(rw, "staged", "2 promoted, 1 held").MatchString(ls.stdout) {
		t.Errorf("changes: the rw session's row is not '2 promoted, 1 held':\n%s", ls.stdout)
	}
	if !row(cp, "pending", "1 (1 held)").MatchString(ls.stdout) {
		t.Errorf("changes: the copy's row is not '1 (1 held)':\n%s", ls.stdout)
	}
	if strings.Contains(ls.stdout, idle) {
		t.Errorf("changes lists an rw session with nothing to review:\n%s", ls.stdout)
	}
	all := ab.run(t, "changes", "--all")
	if all.code != 0 {
		t.Fatalf("changes --all: %d %q", all.code, all.stderr)
	}
	for sess, count := range map[string]string{rw: "2 promoted, 1 held", idle: "0 promoted, 0 held"} {
		if !row(sess, "staged", count).MatchString(all.stdout) {
			t.Errorf("changes --all: session %s is not '%s':\n%s", sess, count, all.stdout)
		}
	}
	if !row(cp, "pending", "1 (1 held)").MatchString(all.stdout) {
		t.Errorf("changes --all: the copy's row:\n%s", all.stdout)
	}
}
