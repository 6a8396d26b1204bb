package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/internal/testutil"
)

// fork runs under the policy its session ran with (the one session_start
// names, unchanged by sha256) or --policy, never under a ./agentbox.yaml
// it finds where it starts: a looser, untrusted one there is not used,
// silently or otherwise. Here the session ran under the built-in default;
// the fork, started in a directory whose ./agentbox.yaml allows every
// command, still asks (and, with nobody to ask, refuses) what the default
// asks, records the built-in policy, and trusts nothing.
func TestForkIgnoresLocalPolicy(t *testing.T) {
	testutil.RequireDocker(t)
	dir := t.TempDir()
	ws, clean, local := filepath.Join(dir, "ws"), filepath.Join(dir, "clean"), filepath.Join(dir, "local")
	for _, d := range []string{ws, clean, local} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(ws, "a.txt"), "v0\n", 0o644)
	writeFile(t, filepath.Join(local, "agentbox.yaml"), "version: 1\ncommands: {default: allow}\n", 0o644)
	log := filepath.Join(dir, "audit.jsonl")
	first := writeFile(t, filepath.Join(dir, "first.yaml"), "turns:\n  - tool_calls:\n      - {name: write_file, args: {path: a.txt, content: \"v1\\n\"}}\n  - content: done\n", 0o644)
	env, store := stageEnv(t)
	r := abCmd{dir: clean, fullEnv: env}.run(t, "run", "--no-memory", "--approve", "deny", "--workspace", ws, "--audit", log, "--script", first, "edit")
	if r.code != 0 {
		t.Fatalf("run under the built-in default: %d\n%s", r.code, r.stderr)
	}
	sess := sessionOf(t, r.stderr)
	in := abCmd{dir: local, fullEnv: env}

	// Without a task: the printed command names no policy file (the
	// session's is the built-in default), nor the local one.
	only := filepath.Join(dir, "only")
	fk := in.run(t, "fork", "--audit", log, sess, "1", only)
	if fk.code != 0 || strings.Contains(fk.stderr, "--policy") || strings.Contains(fk.stderr, "looser") {
		t.Fatalf("fork without a task: %d %q", fk.code, fk.stderr)
	}

	// With a task: the call the local file would allow is asked under the
	// built-in default, so refused with nobody to ask.
	second := writeFile(t, filepath.Join(dir, "second.yaml"), "turns:\n  - tool_calls:\n      - {name: execute_bash, args: {command: \"frobnicate-xyz || touch ran-by-fork\"}}\n  - content: forked\n", 0o644)
	forked := filepath.Join(dir, "forked")
	fr := in.run(t, "fork", "--no-memory", "--approve", "deny", "--audit", log, "--script", second, "--dir", forked, sess, "1", "--", "go on")
	if fr.code != 0 || strings.Contains(fr.stderr, "looser") {
		t.Fatalf("fork with a task: %d\n%s", fr.code, fr.stderr)
	}
	var start, denied, ran bool
	for _, l := range readAuditLog(t, log) {
		rec := l.rec
		if rec.Session == sess {
			continue
		}
		switch {
		case rec.Event == "session_start" && rec.Workspace == forked:
			start = rec.PolicyPath == "built-in"
			if !start {
				t.Errorf("the fork ran under %q, want the session's built-in default", rec.PolicyPath)
			}
		case rec.Event == "tool_call" && rec.Tool == "execute_bash" && rec.Decision == "deny":
			denied = true
		case rec.Event == "tool_call" && rec.Tool == "execute_bash" && rec.Phase == "result":
			ran = true
		}
	}
	if !start || !denied || ran {
		t.Errorf("the fork's session: started under the built-in default %v, the call refused %v, the call ran %v\n%s", start, denied, ran, fr.stderr)
	}
	if b, err := os.ReadFile(filepath.Join(filepath.Dir(store), "trusted-policies.json")); err == nil && strings.Contains(string(b), local) {
		t.Errorf("fork trusted the local policy: %s", b)
	}
}
