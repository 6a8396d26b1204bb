package batch

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentbox/agentbox/agent"
	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/internal/testutil"
	"github.com/agentbox/agentbox/policy"
	"github.com/docker/docker/client"
)

func writeFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// testConfig is a batch on the real engine with a fresh audit log.
func testConfig(t testing.TB, tasks []Task) (Config, *audit.Writer, *client.Client) {
	t.Helper()
	cli := testutil.RequireDocker(t)
	rt := testutil.Runtime(t)
	logPath := filepath.Join(t.TempDir(), "audit.jsonl")
	w, err := audit.Open(logPath, audit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return Config{
		Tasks: tasks, Output: filepath.Join(t.TempDir(), "results"), Concurrency: 2,
		Runtime: rt, Sandbox: Overrides{Image: testutil.Image, ExecutorPath: testutil.Binary(t)},
		Policy: policy.Default(), Audit: w, Version: "test",
	}, w, cli
}

// script is a scripted model of turns.
func script(turns ...agent.Turn) *agent.Script { return &agent.Script{Turns: turns} }

func bash(cmd string) agent.Turn {
	return agent.Turn{ToolCalls: []agent.ScriptCall{{Name: "execute_bash", Args: map[string]any{"command": cmd}}}}
}

func answer(s string) agent.Turn { return agent.Turn{Content: s} }

// readLines reads results.jsonl.
func readLines(t testing.TB, path string) []Line {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []Line
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var l Line
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("bad results line %q: %v", sc.Text(), err)
		}
		out = append(out, l)
	}
	return out
}

// noLeftovers checks that no container of this test process and none of
// the given sessions is left. Tests in this package do not run in
// parallel, so every container of this process belongs to the test.
func noLeftovers(t testing.TB, cli *client.Client, sessions ...string) {
	t.Helper()
	ids, err := testutil.OwnedBy(context.Background(), cli, os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) > 0 {
		t.Errorf("%d containers of this process left: %v", len(ids), ids)
	}
	for _, s := range sessions {
		if left := testutil.Leftovers(t, cli, s); len(left) > 0 {
			t.Errorf("session %s left containers %v", s, left)
		}
	}
}

// verifyAudit checks the chain and that every session ended; at least
// min sessions are expected.
func verifyAudit(t testing.TB, path string, min int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rep, err := audit.Verify(f, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Intact || len(rep.Unended) > 0 {
		t.Fatalf("audit log does not verify: %s", rep)
	}
	if rep.Sessions < min {
		t.Errorf("audit log has %d sessions, want at least %d", rep.Sessions, min)
	}
}
