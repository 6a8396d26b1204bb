package main_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/internal/testutil"
)

// TestAuditQueryCommands: show --json --decision, stats, replay.
func TestAuditQueryCommands(t *testing.T) {
	testutil.RequireDocker(t)
	ws := t.TempDir()
	log := filepath.Join(t.TempDir(), "audit.jsonl")
	sessions := map[string]string{}
	for _, c := range []struct {
		cmd  string
		code int
	}{{"ls -la", 0}, {"sudo ls", 126}, {"echo hi", 0}} {
		r := agentbox(t, nil, "exec", "--workspace", ws, "--audit", log, "--", c.cmd)
		if r.code != c.code {
			t.Fatalf("exec %q: %d %q", c.cmd, r.code, r.stderr)
		}
		lines := readAuditLog(t, log)
		sessions[c.cmd] = lines[len(lines)-1].rec.Session
	}

	// show --json --decision deny: only deny records, the sudo call among them.
	r := agentbox(t, nil, "audit", "show", "--json", "--decision", "deny", log)
	if r.code != 0 {
		t.Fatalf("show: %d %q", r.code, r.stderr)
	}
	out := strings.Split(strings.TrimSpace(r.stdout), "\n")
	sawSudo := false
	for _, l := range out {
		var rec audit.Record
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Fatalf("show --json line %q: %v", l, err)
		}
		if rec.Decision != "deny" {
			t.Errorf("show --decision deny returned %s", l)
		}
		if rec.Args["command"] == "sudo ls" {
			sawSudo = true
		}
	}
	if !sawSudo {
		t.Errorf("show --decision deny misses the sudo call: %q", r.stdout)
	}
	// --json is "exactly as stored": the lines are lines of the log.
	data, _ := os.ReadFile(log)
	for _, l := range out {
		if !bytes.Contains(data, []byte(l+"\n")) {
			t.Errorf("show --json line is not a stored line: %s", l)
		}
	}
	r = agentbox(t, nil, "audit", "show", "--json", "--session", sessions["echo hi"][:8], log)
	if n := strings.Count(r.stdout, "\n"); r.code != 0 || n != 4 {
		t.Errorf("show --session: %d, %d lines: %q", r.code, n, r.stdout)
	}

	// stats lists every session.
	r = agentbox(t, nil, "audit", "stats", log)
	if r.code != 0 || !strings.Contains(r.stdout, "sessions: 3") {
		t.Fatalf("stats: %d %q %q", r.code, r.stdout, r.stderr)
	}
	for cmd, sid := range sessions {
		if !strings.Contains(r.stdout, sid[:8]) {
			t.Errorf("stats does not list the session of %q (%s): %q", cmd, sid, r.stdout)
		}
	}
	r = agentbox(t, nil, "audit", "stats", "--json", log)
	var st struct {
		Records  int `json:"records"`
		Sessions []struct {
			ID string `json:"id"`
		} `json:"sessions"`
		Decisions map[string]int `json:"decisions"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil || r.code != 0 {
		t.Fatalf("stats --json: %v %q", err, r.stdout)
	}
	if st.Records != 11 || len(st.Sessions) != 3 || st.Decisions["deny"] != 1 || st.Decisions["allow"] != 2 {
		t.Errorf("stats --json: %+v", st)
	}

	// replay: a stricter policy changes the ls call; an identical or a
	// policy deciding the same way changes nothing.
	dir := t.TempDir()
	strict := writeFile(t, filepath.Join(dir, "strict.yaml"), "version: 1\nextends: none\ncommands:\n  default: deny\n  allow: [echo]\n  deny: [sudo]\n", 0o644)
	r = agentbox(t, nil, "audit", "replay", "--policy", strict, log)
	if r.code != 1 || !strings.Contains(r.stdout, "ls -la") || strings.Contains(r.stdout, "echo hi") || strings.Contains(r.stdout, "sudo") {
		t.Errorf("replay with a stricter policy: %d %q %q", r.code, r.stdout, r.stderr)
	}
	r = agentbox(t, nil, "audit", "replay", "--json", "--policy", strict, log)
	var ch []audit.Change
	if err := json.Unmarshal([]byte(r.stdout), &ch); err != nil || r.code != 1 {
		t.Fatalf("replay --json: %d %v %q", r.code, err, r.stdout)
	}
	if len(ch) != 1 || ch[0].Session != sessions["ls -la"] || ch[0].Old != "allow" || ch[0].New != "deny" {
		t.Errorf("replay --json changes: %+v", ch)
	}
	same := writeFile(t, filepath.Join(dir, "same.yaml"), "version: 1\nextends: none\ncommands:\n  default: allow\n  deny: [sudo]\n", 0o644)
	for _, p := range []string{same, filepath.Join(testutil.RepoRoot(), "policy.example.yaml")} {
		r = agentbox(t, nil, "audit", "replay", "--policy", p, log)
		if r.code != 0 || !strings.Contains(r.stdout, "no recorded call would be decided differently") {
			t.Errorf("replay with %s: %d %q %q", p, r.code, r.stdout, r.stderr)
		}
	}
	r = agentbox(t, nil, "audit", "replay", "--policy", filepath.Join(testutil.RepoRoot(), "policy", "testdata", "broken", "version.yaml"), log)
	if r.code != 2 {
		t.Errorf("replay with an invalid policy: %d %q", r.code, r.stderr)
	}
}

// TestAuditReplayNoTerminalAsk: a call the policy sent to approval and that
// was refused because there was no terminal is still the policy's "ask":
// replaying the same policy must not report it as changed.
func TestAuditReplayNoTerminalAsk(t *testing.T) {
	testutil.RequireDocker(t)
	log := filepath.Join(t.TempDir(), "audit.jsonl")
	if r := agentbox(t, nil, "exec", "--workspace", t.TempDir(), "--audit", log, "--", "git push"); r.code != 126 {
		t.Fatalf("git push without a terminal: %d %q", r.code, r.stderr)
	}
	r := agentbox(t, nil, "audit", "replay", "--policy", filepath.Join(testutil.RepoRoot(), "policy.example.yaml"), log)
	if r.code != 0 {
		t.Fatalf("replay with the identical policy reports the no-terminal denial as a change: %d %q", r.code, r.stdout)
	}
}

// TestAuditFlagsAfterFile: docs/DESIGN.md writes `audit replay FILE --policy NEW`
// and `audit show FILE [filters]`; flags after FILE must work too.
func TestAuditFlagsAfterFile(t *testing.T) {
	testutil.RequireDocker(t)
	log := filepath.Join(t.TempDir(), "audit.jsonl")
	if r := agentbox(t, nil, "exec", "--workspace", t.TempDir(), "--audit", log, "--", "true"); r.code != 0 {
		t.Fatalf("exec: %d %q", r.code, r.stderr)
	}
	r := agentbox(t, nil, "audit", "replay", log, "--policy", filepath.Join(testutil.RepoRoot(), "policy.example.yaml"))
	if r.code != 0 {
		t.Fatalf("`audit replay FILE --policy NEW` as documented fails: %d %q", r.code, r.stderr)
	}
	if r := agentbox(t, nil, "audit", "show", log, "--json"); r.code != 0 || !strings.HasPrefix(r.stdout, "{") {
		t.Errorf("audit show FILE --json: %d %q", r.code, r.stderr)
	}
	if r := agentbox(t, nil, "audit", "verify", log, "--expect-head", "00000000deadbeef"); r.code != 1 {
		t.Errorf("audit verify FILE --expect-head WRONG: %d %q", r.code, r.stdout)
	}
}

// TestAuditUsageErrors: usage errors are exit 2.
func TestAuditUsageErrors(t *testing.T) {
	log := filepath.Join(t.TempDir(), "none.jsonl")
	for _, args := range [][]string{
		{"audit", "verify"},
		{"audit", "verify", log},
		{"audit", "show", "--since", "yesterday", log},
		{"audit", "stats", "a", "b"},
	} {
		if r := agentbox(t, nil, args...); r.code != 2 || r.stderr == "" {
			t.Errorf("%v: want exit 2 with a message, got %d %q", args, r.code, r.stderr)
		}
	}
	if r := agentbox(t, nil, "audit", "replay", log); r.code != 2 {
		t.Errorf("audit replay without --policy exits %d, not 2: %q", r.code, r.stderr)
	}
}
