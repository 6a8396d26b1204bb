package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/internal/testutil"
)

// policy suggest on a log with refused calls allows none of them (not
// even the id of a refused sudo id), learns the call that ran, filters by
// --session and --since, and its output passes --within its base.
func TestSuggestIgnoresRefusedCalls(t *testing.T) {
	testutil.RequireDocker(t)
	dir := t.TempDir()
	ws := t.TempDir()
	writeFile(t, filepath.Join(ws, ".env"), "TOKEN=x\n", 0o600)
	writeFile(t, filepath.Join(ws, "README.md"), "hello\n", 0o644)
	if err := os.MkdirAll(filepath.Join(ws, ".git", "hooks"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(ws, ".git", "hooks", "post-commit"), "#!/bin/sh\n", 0o644)
	log := filepath.Join(dir, "audit.jsonl")
	in := abCmd{dir: dir}
	for _, c := range []string{"cat .env", "sudo id", "chmod +x .git/hooks/post-commit", "frobnicate --all"} {
		if r := in.run(t, "exec", "--workspace", ws, "--audit", log, "--", c); r.code != 126 {
			t.Fatalf("%q was not refused: %d %q", c, r.code, r.stderr)
		}
	}
	if r := in.run(t, "exec", "--workspace", ws, "--audit", log, "--", "wc -l README.md"); r.code != 0 {
		t.Fatalf("wc: %d %q", r.code, r.stderr)
	}
	sugg := filepath.Join(dir, "sugg.yaml")
	if r := in.run(t, "policy", "suggest", log, "-o", sugg); r.code != 0 {
		t.Fatalf("suggest: %d %q", r.code, r.stderr)
	}
	text, _ := os.ReadFile(sugg)
	for _, c := range []string{"cat .env", "cat README.md", "sudo id", "id", "chmod +x .git/hooks/post-commit", "chmod +x run.sh", "frobnicate --all"} {
		if r := in.run(t, "policy", "explain", "--policy", sugg, c); strings.HasPrefix(r.stdout, "allow") {
			t.Errorf("%q is allowed by a suggestion learned from refused calls: %q\n%s", c, r.stdout, text)
		}
	}
	if r := in.run(t, "policy", "explain", "--policy", sugg, "wc -l README.md"); !strings.HasPrefix(r.stdout, "allow") {
		t.Errorf("the call that ran is not allowed: %q\n%s", r.stdout, text)
	}
	if r := in.run(t, "policy", "check", sugg, "--within", "default"); r.code != 0 {
		t.Errorf("the suggestion is not within its base: %d %q", r.code, r.stdout)
	}
	for _, filter := range [][]string{{"--session", "no-such-session"}, {"--since", "2999-01-01T00:00:00Z"}} {
		r := in.run(t, append([]string{"policy", "suggest", log, "-o", filepath.Join(dir, "f.yaml")}, filter...)...)
		if r.code != 0 || !strings.Contains(r.stderr, ": 0 command rules") {
			t.Errorf("suggest %v: %d %q", filter, r.code, r.stderr)
		}
	}
	if r := in.run(t, "policy", "suggest", log, "--since", "yesterday"); r.code != 2 {
		t.Errorf("--since yesterday: %d %q", r.code, r.stderr)
	}
}
