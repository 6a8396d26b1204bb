package main_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/testutil"
)

// allowAllPolicy writes a policy that allows every command.
func allowAllPolicy(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "policy.yaml")
	writeFile(t, p, "version: 1\nextends: none\ncommands:\n  default: allow\n", 0o644)
	return p
}

// exec keeps stdout and stderr apart and streams the whole output as it is
// written: 1 MiB on stdout arrives byte for byte (far over the 16 KiB the
// model gets), the stderr marker only on stderr, and the first line is on
// the pipe while the command still waits for the test.
func TestExecStreamsStdoutStderr(t *testing.T) {
	testutil.RequireDocker(t)
	ws := t.TempDir()
	pol := allowAllPolicy(t)
	log := filepath.Join(t.TempDir(), "audit.jsonl")
	const size = 1 << 20
	var seq strings.Builder
	for i := 1; seq.Len() < size; i++ {
		fmt.Fprintf(&seq, "%d\n", i)
	}
	want := ("READY\n" + seq.String())[:size]
	script := fmt.Sprintf("echo READY; while [ ! -e go ]; do sleep 0.05; done; seq 1 300000 | head -c %d; echo ERRMARK-7f3 >&2", size-len("READY\n"))

	cmd := exec.Command(testutil.Binary(t), "exec", "--policy", pol, "--workspace", ws, "--audit", log, "--", script)
	// The gate file is written on the host while the command runs: a
	// staged workspace (an overlay) does not promise the sandbox sees a
	// host change mid-call, so this streaming test mounts the workspace
	// directly.
	cmd.Env = append(baseEnv(t), "AGENTBOX_STAGING=off")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	errb := &lockedBuf{}
	cmd.Stderr = errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	out := &lockedBuf{}
	copied := make(chan error, 1)
	go func() { _, err := io.Copy(out, stdout); copied <- err }()

	testutil.Eventually(t, 2*time.Minute, "the first line on stdout", func() bool { return strings.HasPrefix(out.String(), "READY\n") })
	if out.String() != "READY\n" {
		t.Fatalf("more than the first line before the gate: %q", out.String())
	}
	writeFile(t, filepath.Join(ws, "go"), "", 0o644)
	select {
	case <-copied:
	case <-time.After(2 * time.Minute):
		t.Fatal("stdout did not end")
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exec: %v; stderr: %s", err, errb.String())
	}
	got := out.String()
	if len(got) != size || sha256Hex([]byte(got)) != sha256Hex([]byte(want)) {
		t.Errorf("stdout: %d bytes sha256 %s, want %d bytes sha256 %s", len(got), sha256Hex([]byte(got)), size, sha256Hex([]byte(want)))
	}
	stderr := errb.String()
	if !strings.Contains(stderr, "ERRMARK-7f3\n") || strings.Contains(got, "ERRMARK") {
		t.Errorf("the marker belongs on stderr only; stderr %q", stderr)
	}
	if strings.Contains(stderr, "READY") || strings.Contains(stderr, "\n299\n") || len(stderr) > 4096 {
		t.Errorf("stdout data on stderr (%d bytes): %.300q", len(stderr), stderr)
	}
	// The start header, before everything else on stderr.
	hdr, _, _ := strings.Cut(stderr, "\n")
	for _, w := range []string{"session ", "policy " + pol, "network none", "workspace " + ws + " (rw)", "audit " + log} {
		if !strings.Contains(hdr, w) {
			t.Errorf("header %q lacks %q", hdr, w)
		}
	}
	// The audit log keeps size and sha256 of the whole combined output,
	// and a preview, as before.
	var res *auditLine
	for _, l := range readAuditLog(t, log) {
		if l.rec.Phase == "result" {
			res = &l
		}
	}
	if res == nil || res.rec.OutputBytes == nil || *res.rec.OutputBytes != int64(size+len("ERRMARK-7f3\n")) || res.rec.OutputSHA256 == "" || res.rec.OutputPreview == "" {
		t.Errorf("audit result record: %+v", res)
	}
}

// --quiet and --json print no header; --json keeps the combined output in
// the order written; --json-events streams one JSON object per line.
func TestExecOutputModes(t *testing.T) {
	testutil.RequireDocker(t)
	ws := t.TempDir()
	pol := allowAllPolicy(t)
	log := filepath.Join(t.TempDir(), "audit.jsonl")
	script := "echo to-out; echo to-err >&2; echo again; exit 3"
	r := agentbox(t, nil, "exec", "-q", "--policy", pol, "--workspace", ws, "--audit", log, "--", script)
	if r.code != 3 || r.stdout != "to-out\nagain\n" || r.stderr != "to-err\n" {
		t.Errorf("--quiet: %d %q %q", r.code, r.stdout, r.stderr)
	}
	r = agentbox(t, nil, "exec", "--json", "--policy", pol, "--workspace", ws, "--audit", log, "--", script)
	var j struct {
		ExitCode int    `json:"exit_code"`
		Output   string `json:"output"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &j); err != nil {
		t.Fatalf("--json: %v %q", err, r.stdout)
	}
	if r.code != 3 || j.ExitCode != 3 || j.Output != "to-out\nto-err\nagain\n" || r.stderr != "" {
		t.Errorf("--json: %d %+v stderr %q", r.code, j, r.stderr)
	}
	r = agentbox(t, nil, "exec", "--json-events", "--policy", pol, "--workspace", ws, "--audit", log, "--", script)
	if r.code != 3 || r.stderr != "" {
		t.Errorf("--json-events: exit %d, stderr %q", r.code, r.stderr)
	}
	evs := jsonLines(t, r.stdout)
	if len(evs) < 4 || evs[0]["event"] != "start" || evs[0]["audit"] != log || evs[len(evs)-1]["event"] != "end" || evs[len(evs)-1]["exit_code"] != float64(3) {
		t.Fatalf("events: %s", r.stdout)
	}
	streams := map[string]string{}
	names := []string{}
	for _, e := range evs {
		names = append(names, e["event"].(string))
		if e["event"] == "output" {
			streams[e["stream"].(string)] += e["text"].(string)
		}
	}
	if streams["stdout"] != "to-out\nagain\n" || streams["stderr"] != "to-err\n" || !bytes.Contains([]byte(strings.Join(names, " ")), []byte("tool_call end")) {
		t.Errorf("events %v, streams %q", names, streams)
	}
	if evs[0]["session"] != evs[len(evs)-1]["session"] || evs[0]["session"] == "" {
		t.Errorf("start and end name different sessions: %v %v", evs[0]["session"], evs[len(evs)-1]["session"])
	}
}

// A reader that goes away (`| head -1`) ends the command as SIGPIPE would
// end a local one: exit 141, the sandbox removed, not an endless `yes`.
func TestExecClosedStdout(t *testing.T) {
	cli := testutil.RequireDocker(t)
	log := filepath.Join(t.TempDir(), "a.jsonl")
	cmd := exec.Command(testutil.Binary(t), "exec", "-q", "--policy", allowAllPolicy(t), "--workspace", t.TempDir(),
		"--audit", log, "--timeout", "5m", "--", "yes")
	cmd.Env = baseEnv(t)
	errb := &lockedBuf{}
	cmd.Stderr = errb
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "y\n" {
		t.Fatalf("first line %q: %v", line, err)
	}
	stdout.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		t.Fatal("exec went on after its stdout closed")
	}
	if code := cmd.ProcessState.ExitCode(); code != 141 {
		t.Errorf("exit %d, want 141; stderr %q", code, errb.String())
	}
	if left := ownerOf(t, cli, cmd.Process.Pid); left != "" {
		b, _ := os.ReadFile(log)
		t.Errorf("container left: %s; stderr %q; audit:\n%s", left, errb.String(), b)
	}
}

// jsonLines parses output that must be one JSON object per line
// (--json-events), failing the test on any other line.
func jsonLines(t *testing.T, out string) []map[string]any {
	t.Helper()
	var evs []map[string]any
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var e map[string]any
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("not one JSON object per line: %q", sc.Text())
		}
		evs = append(evs, e)
	}
	return evs
}
