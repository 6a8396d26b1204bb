package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/internal/testutil"
)

// readmeSized is README's network example: sandbox and network only.
const readmeSized = "version: 1\nsandbox:\n  network: proxy\nnetwork:\n  allow: [\"pypi.org\", \"*.pythonhosted.org\"]\n"

// A README-sized policy file layers on the built-in default: .env stays
// unreadable, sudo denied, redaction on, through the real binary.
func TestSmallPolicyKeepsDefaultProtections(t *testing.T) {
	dir := t.TempDir()
	pol := writeFile(t, filepath.Join(dir, "small.yaml"), readmeSized, 0o644)
	in := abCmd{dir: dir}
	if r := in.run(t, "policy", "check", pol); r.code != 0 || strings.Contains(r.stdout, "extends: none") {
		t.Fatalf("check: %d %q %q", r.code, r.stdout, r.stderr)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--read", ".env"}, `deny: .env: matched files.read.deny[0] "**/.env"`},
		{[]string{"--read", "sub/id_rsa"}, "deny: sub/id_rsa"},
		{[]string{"--write", ".git/hooks/pre-commit"}, "deny: .git/hooks/pre-commit"},
		{[]string{"sudo", "id"}, `deny: sudo id: matched commands.deny[0] "sudo"`},
		{[]string{"git", "push"}, "ask: git push"},
		{[]string{"ls -la"}, "allow: ls -la"},
	} {
		r := in.run(t, append([]string{"policy", "explain", "--policy", pol}, c.args...)...)
		if !strings.HasPrefix(r.stdout, c.want) {
			t.Errorf("explain %q: %d %q, want %q", c.args, r.code, r.stdout, c.want)
		}
	}
	// The same file from scratch: policy check says how much looser.
	scratch := writeFile(t, filepath.Join(dir, "scratch.yaml"), "version: 1\nextends: none\nsandbox: {network: none}\n", 0o644)
	r := in.run(t, "policy", "check", scratch)
	if r.code != 0 || !strings.Contains(r.stdout, "extends: none: ") || !strings.Contains(r.stdout, "looser than the built-in default") || !strings.Contains(r.stdout, "audit.redact") {
		t.Errorf("check of extends: none: %d %q", r.code, r.stdout)
	}
	if r := in.run(t, "policy", "explain", "--policy", scratch, "--read", ".env"); !strings.HasPrefix(r.stdout, "allow") {
		t.Errorf("extends: none keeps the default's read-deny: %q", r.stdout)
	}
	// A file that does not layer: file:line:col and the field.
	bad := writeFile(t, filepath.Join(dir, "bad.yaml"), "version: 1\nfiles:\n  read: {deny: .env}\ncommands:\n  allow: [ls, ...]\n", 0o644)
	r = in.run(t, "policy", "check", bad)
	for _, want := range []string{"bad.yaml:3:16: files.read.deny: must be a list", "bad.yaml:5:15: commands.allow: ... adds to the built-in default's list only as the first element"} {
		if r.code != 2 || !strings.Contains(r.stderr, want) {
			t.Errorf("check bad: %d %q, want %q", r.code, r.stderr, want)
		}
	}
}

// An exec under the README-sized file: .env is not read, sudo does not
// run, and a secret-looking output is redacted in the audit log.
func TestSmallPolicyExec(t *testing.T) {
	testutil.RequireDocker(t)
	dir := t.TempDir()
	pol := writeFile(t, filepath.Join(dir, "small.yaml"), readmeSized, 0o644)
	ws := t.TempDir()
	writeFile(t, filepath.Join(ws, ".env"), "DB_PASSWORD=hunter2-layered\n", 0o600)
	log := filepath.Join(dir, "audit.jsonl")
	in := abCmd{dir: dir}
	if r := in.run(t, "exec", "--policy", pol, "--workspace", ws, "--audit", log, "--", "cat .env"); r.code != 126 || strings.Contains(r.stdout, "hunter2") {
		t.Errorf("cat .env: %d %q %q", r.code, r.stdout, r.stderr)
	}
	if r := in.run(t, "exec", "--policy", pol, "--workspace", ws, "--audit", log, "--", "sudo id"); r.code != 126 {
		t.Errorf("sudo id: %d %q %q", r.code, r.stdout, r.stderr)
	}
	r := in.run(t, "exec", "--policy", pol, "--workspace", ws, "--audit", log, "--", "echo api_key=sk-layered-123")
	if r.code != 0 {
		t.Fatalf("echo: %d %q", r.code, r.stderr)
	}
	raw, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), "sk-layered-123") || strings.Contains(string(raw), "hunter2") {
		t.Errorf("the audit log holds what the default's redaction removes:\n%s", raw)
	}
}

// A literal files.write.allow entry that lifts a host hazard is looser
// for check --within, diff and the trust check, which name the hazard.
func TestLiftedHazardIsLooser(t *testing.T) {
	dir := t.TempDir()
	lift := "version: 1\nfiles:\n  write:\n    allow: [\".zed/tasks.json\", \"**\", \"/tmp/**\"]\n"
	pol := writeFile(t, filepath.Join(dir, "lift.yaml"), lift, 0o644)
	in := abCmd{dir: dir}
	r := in.run(t, "policy", "check", pol, "--within", "default")
	if r.code != 1 || !strings.Contains(r.stdout, "files.write.allow[0]") || !strings.Contains(r.stdout, "lifts the host hazard (Zed") {
		t.Errorf("check --within: %d %q", r.code, r.stdout)
	}
	if r := in.run(t, "policy", "check", pol, "--within", pol); r.code != 0 {
		t.Errorf("a boundary that lifts it too: %d %q", r.code, r.stdout)
	}
	if r := in.run(t, "policy", "diff", "default", pol); r.code != 1 || !strings.Contains(r.stdout, "host hazard") {
		t.Errorf("diff: %d %q", r.code, r.stdout)
	}
	// The same file as ./agentbox.yaml is refused without a terminal.
	writeFile(t, filepath.Join(dir, "agentbox.yaml"), lift, 0o644)
	ws := t.TempDir()
	r = in.run(t, "exec", "--workspace", ws, "--", "touch ran")
	if r.code != 2 || !strings.Contains(r.stderr, "looser than the built-in default") || !strings.Contains(r.stderr, ".zed") {
		t.Errorf("trust: %d %q", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(ws, "ran")); err == nil {
		t.Error("something ran under an untrusted policy")
	}
}

// mcp and batch apply the trust rule to a ./agentbox.yaml that came with
// the directory: a looser one is refused with one line saying what to do,
// nothing starts, and --policy names it.
func TestTrustMCPAndBatch(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "agentbox.yaml"), "version: 1\ncommands: {default: allow}\n", 0o644)
	ws := t.TempDir()
	in := abCmd{dir: dir, stdin: strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}` + "\n")}
	r := in.run(t, "mcp", "--workspace", ws)
	if r.code != 2 || !strings.Contains(r.stderr, "looser than the built-in default") || !strings.Contains(r.stderr, "--policy") || r.stdout != "" {
		t.Errorf("mcp: %d %q %q", r.code, r.stdout, r.stderr)
	}
	first, _, _ := strings.Cut(strings.TrimPrefix(r.stderr, "agentbox: "), "\n")
	if !strings.Contains(first, "name it with --policy") || !strings.Contains(first, "trust it once on a terminal") {
		t.Errorf("the first line does not say what to do: %q", first)
	}
	writeFile(t, filepath.Join(dir, "tasks.yaml"), "tasks:\n  - id: one\n    task: touch ran\n    workspace: "+ws+"\n    script: s.yaml\n", 0o644)
	writeFile(t, filepath.Join(dir, "s.yaml"), "turns:\n  - tool_calls:\n      - {name: execute_bash, args: {command: \"touch ran\"}}\n  - content: done\n", 0o644)
	r = abCmd{dir: dir}.run(t, "batch", "tasks.yaml", "--output", filepath.Join(dir, "out"))
	if r.code != 2 || !strings.Contains(r.stderr, "looser than the built-in default") {
		t.Errorf("batch: %d %q", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(ws, "ran")); err == nil {
		t.Error("something ran under an untrusted policy")
	}
}
