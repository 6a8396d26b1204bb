package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/internal/testutil"
)

// TestPassedSecretEnvRedacted: a variable the policy passes into the
// sandbox under a secret-looking name reaches the command, but its value
// never reaches the audit log or the terminal.
func TestPassedSecretEnvRedacted(t *testing.T) {
	testutil.RequireDocker(t)
	dir := t.TempDir()
	pol := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(pol, []byte("version: 1\nextends: none\nsandbox:\n  env: [MY_API_TOKEN, PLAIN_VALUE]\ncommands:\n  default: allow\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	const secret = "tok-supersecret-4242"
	log := filepath.Join(dir, "audit.jsonl")
	r := agentbox(t, []string{"MY_API_TOKEN=" + secret, "PLAIN_VALUE=visible-1"}, "exec", "--policy", pol, "--workspace", t.TempDir(), "--audit", log, "--",
		`echo "len=${#MY_API_TOKEN} $MY_API_TOKEN $PLAIN_VALUE"`)
	if r.code != 0 {
		t.Fatalf("exec: %d %q", r.code, r.stderr)
	}
	if !strings.Contains(r.stdout, "len=20") || !strings.Contains(r.stdout, "visible-1") {
		t.Errorf("the variables did not reach the command: %q", r.stdout)
	}
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), secret) || strings.Contains(r.stdout+r.stderr, secret) {
		t.Errorf("the secret value leaked (log or terminal)")
	}
}
