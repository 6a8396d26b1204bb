package main_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/internal/testutil"
	"github.com/agentbox/agentbox/sandbox/docker"
)

type batchLine struct {
	ID      string `json:"id"`
	Status  string `json:"status"`
	Exit    int    `json:"exit"`
	Session string `json:"session"`
}

// batchFixture writes n scripted tasks; tasks from slowFrom on run cmdSlow.
func batchFixture(t *testing.T, n, slowFrom int, slowCmd string) string {
	t.Helper()
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "in.txt"), []byte("in\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	quick := "turns:\n  - tool_calls: [{name: execute_bash, args: {command: \"echo done > out.txt\"}}]\n  - content: finished\n"
	slow := fmt.Sprintf("turns:\n  - tool_calls: [{name: execute_bash, args: {command: %q}}]\n  - content: finished\n", slowCmd)
	for name, body := range map[string]string{"quick.yaml": quick, "slow.yaml": slow} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var b strings.Builder
	b.WriteString("tasks:\n")
	for i := range n {
		s := "quick.yaml"
		if i >= slowFrom {
			s = "slow.yaml"
		}
		fmt.Fprintf(&b, "  - {id: t%02d, task: task %d, workspace: ws, script: %s}\n", i, i, s)
	}
	path := filepath.Join(dir, "tasks.yaml")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func readBatchLines(t *testing.T, path string) []batchLine {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []batchLine
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var l batchLine
		if json.Unmarshal(sc.Bytes(), &l) == nil {
			out = append(out, l)
		}
	}
	return out
}

func batchVerifyLog(t *testing.T, path string) audit.VerifyReport {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rep, err := audit.Verify(f, nil, "")
	if err != nil || !rep.Intact {
		t.Fatalf("audit log: %v %s", err, rep)
	}
	return rep
}

// SIGKILL mid-batch, then gc and --resume: finished tasks are not rerun,
// the rest complete, nothing is left behind.
func TestBatchSIGKILLThenResume(t *testing.T) {
	cli := testutil.RequireDocker(t)
	tasks := batchFixture(t, 8, 3, "sleep 3; echo slow > out.txt")
	out := filepath.Join(t.TempDir(), "results")
	logPath := filepath.Join(t.TempDir(), "audit.jsonl")
	results := filepath.Join(out, "results.jsonl")
	env := baseEnv(t)

	cmd := exec.Command(testutil.Binary(t), "batch", tasks, "--concurrency", "2", "--output", out, "--audit", logPath)
	cmd.Env = env
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	testutil.Eventually(t, 2*time.Minute, "three results lines", func() bool { return len(readBatchLines(t, results)) >= 3 })
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	pid := cmd.Process.Pid
	before := readBatchLines(t, results)
	if len(before) >= 8 {
		t.Skip("the batch finished before it could be killed")
	}

	// A create the killed process had in flight may land after the first
	// gc, and a concurrent gc (every exec starts with one) may be removing
	// a container right now: gc until the killed batch owns nothing.
	testutil.Eventually(t, time.Minute, "gc to remove the killed batch's containers", func() bool {
		if r := agentbox(t, nil, "gc"); r.code != 0 {
			t.Fatalf("gc: %d %s", r.code, r.stderr)
		}
		return ownerOf(t, cli, pid) == ""
	})

	// The tasks killed mid-session are interrupted: they run again only
	// when asked (see TestBatchResumeNeverRepeatsAFinishedTask).
	r := batchRunEnv(t, env, "batch", tasks, "--resume", "--rerun-interrupted", "--concurrency", "2", "--output", out, "--audit", logPath, "--json")
	if r.code != 0 {
		t.Fatalf("resume: exit %d\n%s", r.code, r.stderr)
	}
	var sum struct {
		Total, Skipped, Ran, OK int
	}
	if err := json.Unmarshal([]byte(r.stdout), &sum); err != nil {
		t.Fatalf("--json summary: %v %q", err, r.stdout)
	}
	after := readBatchLines(t, results)
	if len(after) != 8 || sum.OK != 8 || sum.Skipped != len(before) || sum.Ran != 8-len(before) {
		t.Fatalf("after resume: %d lines, summary %+v (killed with %d)", len(after), sum, len(before))
	}
	seen := map[string]bool{}
	for i, l := range after {
		if seen[l.ID] {
			t.Errorf("task %s ran twice", l.ID)
		}
		seen[l.ID] = true
		if i < len(before) && l != before[i] {
			t.Errorf("line %d rewritten: %+v -> %+v", i+1, before[i], l)
		}
		if b, err := os.ReadFile(filepath.Join(out, l.ID, "files", "out.txt")); err != nil || len(b) == 0 {
			t.Errorf("%s: no exported out.txt: %v", l.ID, err)
		}
	}
	if left := ownerOf(t, cli, r.pid); left != "" {
		t.Errorf("resumed batch left container %s", left)
	}
	if _, err := os.Stat(filepath.Join(out, ".work")); !os.IsNotExist(err) {
		t.Errorf("workspace copies left: %v", err)
	}
	batchVerifyLog(t, logPath)
}

// batchRunEnv is agentbox with a given environment (shared state between runs).
func batchRunEnv(t *testing.T, env []string, args ...string) result {
	t.Helper()
	return abCmd{fullEnv: env}.run(t, args...)
}

// A failing task makes the batch exit 1; the others still succeed; flags
// may follow the task file; plain progress lines without a terminal.
func TestBatchExitCodesAndOutput(t *testing.T) {
	cli := testutil.RequireDocker(t)
	tasks := batchFixture(t, 3, 2, "exit 3")
	// Make the last task fail: its script runs out of turns.
	dir := filepath.Dir(tasks)
	if err := os.WriteFile(filepath.Join(dir, "short.yaml"), []byte("turns:\n  - tool_calls: [{name: execute_bash, args: {command: \"true\"}}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(tasks)
	if err := os.WriteFile(tasks, []byte(string(b)+"  - {id: broken, task: x, workspace: ws, script: short.yaml}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "results")
	logPath := filepath.Join(t.TempDir(), "audit.jsonl")
	r := agentbox(t, nil, "batch", tasks, "-j", "2", "--output", out, "--audit", logPath, "--no-pool")
	if r.code != 1 {
		t.Fatalf("want exit 1, got %d: %s", r.code, r.stderr)
	}
	for _, want := range []string{"batch: [", "broken: error"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	if !strings.Contains(r.stdout, "4 tasks: 3 ok, 1 failed") {
		t.Errorf("the summary table goes to stdout:\n%s", r.stdout)
	}
	lines := readBatchLines(t, filepath.Join(out, "results.jsonl"))
	if len(lines) != 4 {
		t.Fatalf("%d lines", len(lines))
	}
	for _, l := range lines {
		if (l.ID == "broken") != (l.Status != "ok") {
			t.Errorf("%s: status %s", l.ID, l.Status)
		}
		if ids, _ := docker.ListSandboxes(context.Background(), cli, l.Session); len(ids) > 0 {
			t.Errorf("%s: container left", l.ID)
		}
	}
	if left := ownerOf(t, cli, r.pid); left != "" {
		t.Errorf("container left: %s", left)
	}
	rep := batchVerifyLog(t, logPath)
	if rep.Sessions != 4 || len(rep.Unended) != 0 {
		t.Errorf("audit: %s", rep)
	}
	// Running again into the same output needs --resume.
	r = agentbox(t, nil, "batch", tasks, "--output", out, "--audit", logPath)
	if r.code != 2 || !strings.Contains(r.stderr, "--resume") {
		t.Errorf("rerun without --resume: %d %s", r.code, r.stderr)
	}
}

// A bad task file starts nothing and names every problem with its line.
func TestBatchBadTaskFile(t *testing.T) {
	testutil.RequireDocker(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "tasks.yaml")
	body := "tasks:\n  - id: a\n    task: t\n    workspace: missing\n  - id: a\n    task: t\n    workspace: .\n    colour: red\n"
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "results")
	r := agentbox(t, nil, "batch", path, "--output", out)
	if r.code != 2 {
		t.Fatalf("want exit 2, got %d: %s", r.code, r.stderr)
	}
	for _, want := range []string{path + ":2: tasks[0].workspace", path + ":5: tasks[1].id: duplicate", path + ":8: tasks[1].colour: unknown field", "nothing was started"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("output created for an invalid batch")
	}
}
