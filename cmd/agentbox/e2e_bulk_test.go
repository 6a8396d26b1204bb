package main_test

import (
	"archive/tar"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/internal/testutil"
)

// TestBulkCallPromotedWhileModelThinks: under the built-in default policy
// and --approve deny, a call that unpacks 1,200 files (and an .envrc, a
// host hazard) from a tar archive in a staged rw session: the hazard is held and recorded
// with the call, the files' copies finish while the model thinks and are
// recorded (their `changes` record) before the next call is decided, and
// the next call and the host both see every file.
func TestBulkCallPromotedWhileModelThinks(t *testing.T) {
	testutil.RequireDocker(t)
	ws, log := t.TempDir(), filepath.Join(t.TempDir(), "audit.jsonl")
	f, err := os.Create(filepath.Join(ws, "bulk.tar"))
	if err != nil {
		t.Fatal(err)
	}
	tw := tar.NewWriter(f)
	add := func(name, body string) {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body))}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	for i := 1; i <= 1200; i++ {
		add(fmt.Sprintf("bulk/f%d", i), fmt.Sprintf("%d\n", i))
	}
	add(".envrc", "echo pwned\n")
	if err := errors.Join(tw.Close(), f.Close()); err != nil {
		t.Fatal(err)
	}
	script := writeFile(t, filepath.Join(t.TempDir(), "bulk.yaml"), `turns:
  - tool_calls:
      - {name: execute_bash, args: {command: "tar -xf bulk.tar"}}
  - think: 300ms
    tool_calls:
      - {name: read_file, args: {path: bulk/f1200}}
  - content: done
`, 0o644)
	r := agentbox(t, nil, "run", "--no-memory", "--approve", "deny", "--workspace", ws, "--audit", log, "--script", script, "bulk")
	if r.code != 0 {
		t.Fatalf("run: %d %q %q", r.code, r.stdout, r.stderr)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "bulk", "f1200")); err != nil || string(b) != "1200\n" {
		t.Fatalf("the last file on the host: %q, %v", b, err)
	}
	if _, err := os.Lstat(filepath.Join(ws, ".envrc")); err == nil {
		t.Error("the held .envrc reached the workspace")
	}
	var order []string
	files, heldEnvrc, readOK := 0, false, false
	for _, l := range readAuditLog(t, log) {
		rec := l.rec
		switch {
		case rec.Event == "changes" && rec.CallID == "call_1_1":
			files += audit.CountFiles(rec.Files)
			order = append(order, "changes 1")
		case rec.Event == "alarm" && rec.CallID == "call_1_1" && rec.Path == ".envrc" && rec.Action == "held":
			heldEnvrc = true
		case rec.Event == "tool_call" && rec.CallID == "call_2_1" && rec.Phase == "decision":
			order = append(order, "decision 2")
		case rec.Event == "tool_call" && rec.CallID == "call_2_1" && rec.Phase == "result":
			readOK = rec.Error == "" && rec.Decision == "allow"
		}
	}
	if files < 1200 || !heldEnvrc {
		t.Errorf("call 1's records: %d files changed (want ≥ 1200), .envrc held: %v", files, heldEnvrc)
	}
	if len(order) != 2 || order[0] != "changes 1" {
		t.Errorf("records %v: want call 1's changes before call 2 is decided", order)
	}
	if !readOK {
		t.Error("call 2 (read_file of the last bulk file) did not succeed")
	}
}
