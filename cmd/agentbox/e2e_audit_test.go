package main_test

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/internal/testutil"
)

// auditLine is one record of an audit log with its raw bytes.
type auditLine struct {
	raw []byte
	rec audit.Record
}

// readAuditLog parses every line of the log at path.
func readAuditLog(t *testing.T, path string) []auditLine {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading the audit log: %v", err)
	}
	var out []auditLine
	for i, l := range bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n")) {
		if len(l) == 0 {
			t.Fatalf("audit log line %d is empty", i+1)
		}
		var r audit.Record
		if err := json.Unmarshal(l, &r); err != nil {
			t.Fatalf("audit log line %d is not a record: %v: %s", i+1, err, l)
		}
		out = append(out, auditLine{raw: append([]byte(nil), l...), rec: r})
	}
	return out
}

// sessionRecords returns the records of one session, in order.
func sessionRecords(lines []auditLine, session string) []audit.Record {
	var out []audit.Record
	for _, l := range lines {
		if l.rec.Session == session {
			out = append(out, l.rec)
		}
	}
	return out
}

// events lists the event names of recs (tool calls with their phase).
func events(recs []audit.Record) []string {
	var out []string
	for _, r := range recs {
		e := r.Event
		if r.Phase != "" {
			e += "/" + r.Phase
		}
		out = append(out, e)
	}
	return out
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func randomHex(t *testing.T, n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

var headRE = regexp.MustCompile(`\(head ([0-9a-f]{64})\)`)

// verifyLog runs `agentbox audit verify` and returns the result and the head
// it printed ("" if none).
func verifyLog(t *testing.T, env []string, args ...string) (result, string) {
	t.Helper()
	r := agentbox(t, env, append([]string{"audit", "verify"}, args...)...)
	head := ""
	if m := headRE.FindStringSubmatch(r.stdout); m != nil {
		head = m[1]
	}
	return r, head
}

func writeFile(t *testing.T, path, content string, mode os.FileMode) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestAuditExecRecords: one exec appends session_start, the tool call's
// decision and result, and session_end; verify passes and prints the head;
// an edited byte, a cut tail and a wrong expected head are caught.
func TestAuditExecRecords(t *testing.T) {
	cli := testutil.RequireDocker(t)
	ws := t.TempDir()
	writeFile(t, filepath.Join(ws, "canary.txt"), "canary\n", 0o644)
	log := filepath.Join(t.TempDir(), "logs", "audit.jsonl")

	r := agentbox(t, nil, "exec", "--workspace", ws, "--audit", log, "--", "ls -la")
	if r.code != 0 || !strings.Contains(r.stdout, "canary.txt") {
		t.Fatalf("exec ls -la: %d %q %q", r.code, r.stdout, r.stderr)
	}
	if left := ownerOf(t, cli, r.pid); left != "" {
		t.Errorf("container %s left behind", left)
	}
	lines := readAuditLog(t, log)
	if len(lines) == 0 {
		t.Fatal("empty audit log")
	}
	sid := lines[0].rec.Session
	recs := sessionRecords(lines, sid)
	want := []string{"session_start", "tool_call/decision", "tool_call/result", "session_end"}
	if got := events(recs); strings.Join(got, " ") != strings.Join(want, " ") || len(recs) != len(lines) {
		t.Fatalf("events: got %v (of %d lines), want %v", got, len(lines), want)
	}
	start, dec, res, end := recs[0], recs[1], recs[2], recs[3]

	policyBytes, err := os.ReadFile(filepath.Join(testutil.RepoRoot(), "policy.example.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if start.PolicySHA256 != sha256Hex(policyBytes) {
		t.Errorf("session_start policy_sha256 %q, want the built-in default's %s", start.PolicySHA256, sha256Hex(policyBytes))
	}
	if !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(start.ContainerID) {
		t.Errorf("session_start container_id %q", start.ContainerID)
	}
	if start.Task != "ls -la" || start.Image == "" || start.ImageID == "" || start.WorkspaceMode != "rw" || start.Version == "" {
		t.Errorf("session_start fields: %+v", start)
	}
	if wsReal, _ := filepath.EvalSymlinks(ws); start.Workspace != ws && start.Workspace != wsReal {
		t.Errorf("session_start workspace %q, want %q", start.Workspace, ws)
	}
	if dec.Tool != "execute_bash" || dec.Args["command"] != "ls -la" || dec.Decision != "allow" ||
		dec.Rule != "commands.allow[0]" || dec.DecidedBy != "policy" || dec.CallID == "" {
		t.Errorf("decision record: %+v", dec)
	}
	if res.CallID != dec.CallID || res.ExitCode == nil || *res.ExitCode != 0 || res.TimedOut == nil || *res.TimedOut {
		t.Errorf("result record: %+v", res)
	}
	if res.OutputSHA256 != sha256Hex([]byte(r.stdout)) || res.OutputBytes == nil || *res.OutputBytes != int64(len(r.stdout)) {
		t.Errorf("result output_sha256/bytes %q/%v do not describe the output printed (%d bytes, %s)",
			res.OutputSHA256, res.OutputBytes, len(r.stdout), sha256Hex([]byte(r.stdout)))
	}
	if !strings.Contains(res.OutputPreview, "canary.txt") {
		t.Errorf("output_preview %q", res.OutputPreview)
	}
	if end.Status != "ok" || end.Steps != 1 {
		t.Errorf("session_end: %+v", end)
	}
	for i, l := range lines {
		if i > 0 && l.rec.Prev != sha256Hex(lines[i-1].raw) {
			t.Errorf("line %d: prev %s is not the sha256 of line %d", i+1, l.rec.Prev, i)
		}
		if l.rec.Seq <= 0 || i > 0 && l.rec.Seq != lines[i-1].rec.Seq+1 {
			t.Errorf("line %d: seq %d", i+1, l.rec.Seq)
		}
	}

	v, head := verifyLog(t, nil, log)
	if v.code != 0 || !strings.HasPrefix(v.stdout, "ok: 4 records, 1 session") {
		t.Fatalf("verify: %d %q %q", v.code, v.stdout, v.stderr)
	}
	if head != sha256Hex(lines[len(lines)-1].raw) {
		t.Errorf("verify printed head %q, want the sha256 of the last line", head)
	}

	// Flip one byte inside line 2: verify names line 2.
	data, _ := os.ReadFile(log)
	i := bytes.Index(data, []byte(`"decision":"allow"`))
	if i < 0 || bytes.Count(data[:i], []byte("\n")) != 1 {
		t.Fatalf("no allow decision on line 2")
	}
	flipped := append([]byte(nil), data...)
	flipped[i+len(`"decision":"al`)] ^= 0x01 // allow -> amlow
	bad := filepath.Join(t.TempDir(), "flipped.jsonl")
	writeFile(t, bad, string(flipped), 0o600)
	v, _ = verifyLog(t, nil, bad)
	if v.code != 1 || !strings.Contains(v.stdout, "line 2") {
		t.Errorf("verify of a flipped byte: %d %q %q", v.code, v.stdout, v.stderr)
	}

	// Cut the tail: the chain alone is intact, the recorded head is gone.
	cut := filepath.Join(t.TempDir(), "cut.jsonl")
	writeFile(t, cut, string(bytes.Join(rawLines(lines[:2]), []byte("\n")))+"\n", 0o600)
	if v, _ := verifyLog(t, nil, cut); v.code != 0 {
		t.Errorf("a cut log whose chain is intact: verify %d %q", v.code, v.stdout)
	}
	v, _ = verifyLog(t, nil, "--expect-head", head, cut)
	if v.code != 1 || !strings.Contains(v.stdout, "cut from the end") {
		t.Errorf("verify --expect-head on a cut log: %d %q %q", v.code, v.stdout, v.stderr)
	}
	v, _ = verifyLog(t, nil, "--expect-head", head, log)
	if v.code != 0 {
		t.Errorf("verify --expect-head with the right head: %d %q %q", v.code, v.stdout, v.stderr)
	}
	v, _ = verifyLog(t, nil, "--expect-head", strings.Repeat("ab", 32), log)
	if v.code != 1 {
		t.Errorf("verify --expect-head with a wrong head: %d %q %q", v.code, v.stdout, v.stderr)
	}
}

func rawLines(ls []auditLine) [][]byte {
	var out [][]byte
	for _, l := range ls {
		out = append(out, l.raw)
	}
	return out
}

// TestAuditInsideWorkspaceRefused: a log the sandbox could rewrite is
// refused before anything starts, also when reached through a symlink.
func TestAuditInsideWorkspaceRefused(t *testing.T) {
	cli := testutil.RequireDocker(t)
	ws := t.TempDir()
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(ws, link); err != nil {
		t.Fatal(err)
	}
	for _, log := range []string{filepath.Join(ws, "audit.jsonl"), filepath.Join(ws, "sub", "a.jsonl"), filepath.Join(link, "a.jsonl")} {
		r := agentbox(t, nil, "exec", "--workspace", ws, "--audit", log, "--", "touch ran")
		if r.code != 2 || !strings.Contains(r.stderr, "inside the workspace") || !strings.Contains(r.stderr, "--audit") {
			t.Errorf("--audit %s: want exit 2 naming the problem, got %d %q", log, r.code, r.stderr)
		}
		if left := ownerOf(t, cli, r.pid); left != "" {
			t.Errorf("container %s started", left)
		}
		entries, _ := os.ReadDir(ws)
		if len(entries) != 0 {
			t.Errorf("--audit %s: something was created in the workspace: %v", log, entries)
		}
	}
}

// TestAuditFileModes: the default log is 0600 in a 0700 directory.
func TestAuditFileModes(t *testing.T) {
	testutil.RequireDocker(t)
	state := filepath.Join(t.TempDir(), "state")
	r := agentbox(t, []string{"XDG_STATE_HOME=" + state}, "exec", "--workspace", t.TempDir(), "--", "true")
	if r.code != 0 {
		t.Fatalf("exec: %d %q", r.code, r.stderr)
	}
	log := filepath.Join(state, "agentbox", "audit.jsonl")
	fi, err := os.Stat(log)
	if err != nil {
		t.Fatalf("default audit log not at %s: %v", log, err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("log mode %v, want 0600", fi.Mode().Perm())
	}
	di, err := os.Stat(filepath.Dir(log))
	if err != nil {
		t.Fatal(err)
	}
	if di.Mode().Perm() != 0o700 {
		t.Errorf("log directory mode %v, want 0700", di.Mode().Perm())
	}
	// An existing log others could write is refused: nothing runs.
	if err := os.Chmod(log, 0o622); err != nil {
		t.Fatal(err)
	}
	ws := t.TempDir()
	r = agentbox(t, []string{"XDG_STATE_HOME=" + state}, "exec", "--workspace", ws, "--", "touch ran")
	if r.code != 2 || !strings.Contains(r.stderr, "chmod 600") {
		t.Errorf("exec with a group-writable log: %d %q", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(ws, "ran")); err == nil {
		t.Errorf("the command ran although the log was refused")
	}
	if err := os.Chmod(log, 0o600); err != nil {
		t.Fatal(err)
	}
	if r := agentbox(t, []string{"XDG_STATE_HOME=" + state}, "exec", "--workspace", t.TempDir(), "--", "true"); r.code != 0 {
		t.Fatalf("exec: %d %q", r.code, r.stderr)
	}
	if len(readAuditLog(t, log)) != 8 {
		t.Errorf("second exec did not append to the default log")
	}
}

// TestAuditRedactsSecrets: the API key (a known secret) and values matched by
// the policy's redact patterns never reach the log; the key not the terminal.
func TestAuditRedactsSecrets(t *testing.T) {
	testutil.RequireDocker(t)
	key := "sk-test-" + randomHex(t, 12)
	log := filepath.Join(t.TempDir(), "audit.jsonl")
	r := agentbox(t, []string{"OPENAI_API_KEY=" + key}, "exec", "--workspace", t.TempDir(), "--audit", log, "--",
		"echo api_key=abc123; echo "+key+"; echo \"k=$OPENAI_API_KEY.\"")
	if r.code != 0 {
		t.Fatalf("exec: %d %q %q", r.code, r.stdout, r.stderr)
	}
	if strings.Contains(r.stdout+r.stderr, key) {
		t.Errorf("the API key reached the terminal: %q %q", r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "k=.") {
		t.Errorf("OPENAI_API_KEY is set inside the sandbox: %q", r.stdout)
	}
	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{key, "abc123", strings.TrimPrefix(key, "sk-test-")} {
		if bytes.Contains(data, []byte(secret)) {
			t.Errorf("%q is in the audit log:\n%s", secret, data)
		}
	}
	if !bytes.Contains(data, []byte("[REDACTED]")) {
		t.Errorf("no redaction marker in the log:\n%s", data)
	}
	if v, _ := verifyLog(t, nil, log); v.code != 0 {
		t.Errorf("verify after redaction: %d %q", v.code, v.stdout)
	}
}

// TestAuditKeyWiring: AGENTBOX_AUDIT_KEY and --audit-key-file / --key-file
// reach the writer and the verifier.
func TestAuditKeyWiring(t *testing.T) {
	testutil.RequireDocker(t)
	dir := t.TempDir()
	envKey := "audit-key-" + randomHex(t, 8)

	// The key from the environment: every line carries a MAC.
	log := filepath.Join(dir, "env.jsonl")
	r := agentbox(t, []string{"AGENTBOX_AUDIT_KEY=" + envKey}, "exec", "--workspace", t.TempDir(), "--audit", log, "--", "echo "+envKey)
	if r.code != 0 {
		t.Fatalf("exec with AGENTBOX_AUDIT_KEY: %d %q", r.code, r.stderr)
	}
	if strings.Contains(r.stdout+r.stderr, envKey) {
		t.Errorf("the audit key reached the terminal: %q %q", r.stdout, r.stderr)
	}
	data, _ := os.ReadFile(log)
	if bytes.Contains(data, []byte(envKey)) {
		t.Errorf("the audit key is in the log")
	}
	lines := readAuditLog(t, log)
	for i, l := range lines {
		if !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(l.rec.MAC) {
			t.Errorf("line %d has no MAC: %s", i+1, l.raw)
		}
	}
	v, _ := verifyLog(t, []string{"AGENTBOX_AUDIT_KEY=" + envKey}, log)
	if v.code != 0 || !strings.Contains(v.stdout, "MACs valid") {
		t.Errorf("verify with the key: %d %q %q", v.code, v.stdout, v.stderr)
	}
	v, _ = verifyLog(t, nil, log)
	if v.code != 0 || !strings.Contains(v.stdout, "no key was given") {
		t.Errorf("verify without the key should check the chain and say so: %d %q", v.code, v.stdout)
	}
	v, _ = verifyLog(t, []string{"AGENTBOX_AUDIT_KEY=not-the-key"}, log)
	if v.code != 1 || !strings.Contains(v.stdout, "line 1") || !strings.Contains(v.stdout, "MAC") {
		t.Errorf("verify with a wrong key: %d %q %q", v.code, v.stdout, v.stderr)
	}
	keyFile := writeFile(t, filepath.Join(dir, "key"), envKey+"\n", 0o600)
	v, _ = verifyLog(t, nil, "--key-file", keyFile, log)
	if v.code != 0 || !strings.Contains(v.stdout, "MACs valid") {
		t.Errorf("verify --key-file: %d %q %q", v.code, v.stdout, v.stderr)
	}

	// Rewriting the whole file with a recomputed chain fools the chain
	// check but not the MAC check.
	var rewritten []byte
	prev := lines[0].rec.Prev
	for _, l := range lines {
		var m map[string]any
		if err := json.Unmarshal(l.raw, &m); err != nil {
			t.Fatal(err)
		}
		delete(m, "mac")
		m["prev"] = prev
		if m["event"] == "session_end" {
			m["status"] = "ok-forged"
		}
		b, _ := json.Marshal(m)
		rewritten = append(append(rewritten, b...), '\n')
		prev = sha256Hex(b)
	}
	forged := writeFile(t, filepath.Join(dir, "forged.jsonl"), string(rewritten), 0o600)
	if v, _ := verifyLog(t, nil, forged); v.code != 0 {
		t.Fatalf("test setup: the rewritten chain should verify without a key: %d %q", v.code, v.stdout)
	}
	v, _ = verifyLog(t, nil, "--key-file", keyFile, forged)
	if v.code != 1 || !strings.Contains(v.stdout, "line 1") {
		t.Errorf("verify --key-file of a rewritten log: %d %q %q", v.code, v.stdout, v.stderr)
	}

	// --audit-key-file on exec; a key file others can read is refused.
	log2 := filepath.Join(dir, "file.jsonl")
	r = agentbox(t, nil, "exec", "--workspace", t.TempDir(), "--audit", log2, "--audit-key-file", keyFile, "--", "true")
	if r.code != 0 {
		t.Fatalf("exec --audit-key-file: %d %q", r.code, r.stderr)
	}
	for i, l := range readAuditLog(t, log2) {
		if l.rec.MAC == "" {
			t.Errorf("line %d has no MAC with --audit-key-file", i+1)
		}
	}
	if v, _ := verifyLog(t, []string{"AGENTBOX_AUDIT_KEY=" + envKey}, log2); v.code != 0 || !strings.Contains(v.stdout, "MACs valid") {
		t.Errorf("a file key and the same env key disagree: %d %q", v.code, v.stdout)
	}
	loose := writeFile(t, filepath.Join(dir, "loose"), envKey, 0o644)
	r = agentbox(t, nil, "exec", "--workspace", t.TempDir(), "--audit", filepath.Join(dir, "loose.jsonl"), "--audit-key-file", loose, "--", "true")
	if r.code != 2 || !strings.Contains(r.stderr, "chmod 600") {
		t.Errorf("exec with a group/world-readable key file: %d %q", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "loose.jsonl")); err == nil {
		t.Errorf("a log was written although the key file was refused")
	}
	if v, _ := verifyLog(t, nil, "--key-file", loose, log2); v.code != 2 {
		t.Errorf("verify with a group/world-readable key file: %d %q", v.code, v.stderr)
	}
}
