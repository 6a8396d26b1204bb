package main_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestVerifyCheckpointKeepsDamageReport: a log changed after its signed
// checkpoint fails `audit verify --checkpoint` with the same line-level
// report of the damage that plain `audit verify` gives (which line, what
// broke), after the NOT extended line; exit 1 both ways.
func TestVerifyCheckpointKeepsDamageReport(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "audit.jsonl")
	writeReviewLog(t, log, nil)
	skey := filepath.Join(dir, "signer.key")
	vkey := strings.TrimSpace(agentbox(t, nil, "audit", "keygen", "audit.example", "--out", skey).stdout)
	r := agentbox(t, nil, "audit", "checkpoint", log, "--sign-key", skey)
	if r.code != 0 {
		t.Fatalf("checkpoint: %d %q", r.code, r.stderr)
	}
	cp := writeFile(t, filepath.Join(dir, "cp"), r.stdout, 0o600)
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(b), "\n")
	edited := -1
	for i, l := range lines {
		if strings.Contains(l, "ls -la") {
			lines[i], edited = strings.Replace(l, "ls -la", "ls -lx", 1), i+1 // edited in place
			break
		}
	}
	if edited < 0 {
		t.Fatal("no line to edit")
	}
	if err := os.WriteFile(log, []byte(strings.Join(lines, "")), 0o600); err != nil {
		t.Fatal(err)
	}
	plain := agentbox(t, nil, "audit", "verify", log)
	if plain.code != 1 || !strings.Contains(plain.stdout, fmt.Sprint(edited)) {
		t.Fatalf("plain verify of a changed log: %d\n%s%s", plain.code, plain.stdout, plain.stderr)
	}
	withCP := agentbox(t, nil, "audit", "verify", log, "--checkpoint", cp, "--verify-key", vkey)
	if withCP.code != 1 || !strings.Contains(withCP.stdout, "NOT extended") {
		t.Fatalf("verify --checkpoint of a changed log: %d\n%s%s", withCP.code, withCP.stdout, withCP.stderr)
	}
	if !strings.Contains(withCP.stdout, strings.TrimSpace(plain.stdout)) {
		t.Errorf("verify --checkpoint dropped the line-level report\nplain:\n%s\nwith --checkpoint:\n%s", plain.stdout, withCP.stdout)
	}
}
