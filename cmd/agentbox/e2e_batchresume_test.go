package main_test

import (
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
)

// resumeFixture writes three scripted tasks that append a line to a file
// of their workspace copy; t01 then runs slowCmd in a second call when it
// is set.
func resumeFixture(t *testing.T, slowCmd string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "ws"), 0o755); err != nil {
		t.Fatal(err)
	}
	call := func(c string) string {
		return fmt.Sprintf("  - tool_calls: [{name: execute_bash, args: {command: %q}}]\n", c)
	}
	appendCall := call("echo ran >> log.txt")
	for name, body := range map[string]string{
		"append.yaml": "turns:\n" + appendCall + "  - content: finished\n",
		// The line is appended, then the session goes on.
		"slow.yaml": "turns:\n" + appendCall + call(slowCmd) + "  - content: finished\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	second := "append.yaml"
	if slowCmd != "" {
		second = "slow.yaml"
	}
	tasks := "tasks:\n  - {id: t00, task: a, workspace: ws, script: append.yaml}\n" +
		"  - {id: t01, task: b, workspace: ws, script: " + second + "}\n" +
		"  - {id: t02, task: c, workspace: ws, script: append.yaml}\n"
	path := filepath.Join(dir, "tasks.yaml")
	if err := os.WriteFile(path, []byte(tasks), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// appendsOf counts, per task, the commands that appended a line: the
// executed tool calls of the task's sessions in the audit log.
func appendsOf(t *testing.T, logPath string) map[string]int {
	t.Helper()
	n := map[string]int{}
	f, err := os.Open(logPath)
	if err != nil {
		return n // not written yet
	}
	defer f.Close()
	task := map[string]string{}
	appends := map[string]bool{} // session/call ids of the appending calls
	_ = audit.Scan(f, func(_ int, r audit.Record) error {
		call := r.Session + "/" + r.CallID
		switch {
		case r.Event == audit.EventSessionStart:
			task[r.Session] = r.TaskID
		case r.Event == "tool_call" && r.Phase == "decision":
			cmd, _ := r.Args["command"].(string)
			appends[call] = strings.Contains(cmd, ">> log.txt")
		case r.Event == "tool_call" && r.Phase == "result" && r.ExitCode != nil && appends[call]:
			n[task[r.Session]]++
		}
		return nil
	})
	return n
}

type resumeSummary struct {
	Total, OK, Ran, Skipped int
	ByStatus                map[string]int `json:"by_status"`
	Tasks                   []struct{ ID, Status, Error string }
}

// TestBatchResumeNeverRepeatsAFinishedTask kills a batch at each point of
// a task's life and resumes it: a task whose session ended is never run
// again (its result comes back from the journal or the audit log); one
// that started and did not end is interrupted and runs again only with
// --rerun-interrupted; every line of results.jsonl names a distinct task.
func TestBatchResumeNeverRepeatsAFinishedTask(t *testing.T) {
	testutil.RequireDocker(t)
	cases := []struct {
		point       string // AGENTBOX_TEST_BATCH_CRASH_AT for t01, or "" for kill -9 mid-session
		interrupted bool   // t01 is reported interrupted on resume
		ranBefore   int    // t01's appends before the resume
	}{
		{"started", true, 0},
		{"", true, 1},
		{"session-ended", false, 1},
		{"journalled", false, 1},
	}
	for _, c := range cases {
		name := c.point
		if name == "" {
			name = "kill-mid-session"
		}
		t.Run(name, func(t *testing.T) {
			env := baseEnv(t)
			slow := ""
			if c.point == "" {
				slow = "sleep 8" // killed during it; the rerun waits it out
			}
			tasks := resumeFixture(t, slow)
			out := filepath.Join(t.TempDir(), "out")
			logPath := filepath.Join(t.TempDir(), "audit.jsonl")
			args := []string{"batch", tasks, "-j", "1", "--no-pool", "--output", out, "--audit", logPath}
			cmd := exec.Command(testutil.Binary(t), args...)
			cmd.Env = env
			if c.point != "" {
				cmd.Env = append(append([]string{}, env...), "AGENTBOX_TEST_BATCH_CRASH_AT="+c.point+":t01")
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				_ = cmd.Process.Kill()
				_ = cmd.Wait()
				batchRunEnv(t, env, "gc") // whatever a failure left mounted below the state directory
			})
			if c.point == "" {
				testutil.Eventually(t, 2*time.Minute, "t01's command to run", func() bool { return appendsOf(t, logPath)["t01"] == 1 })
				_ = cmd.Process.Kill()
			}
			_ = cmd.Wait()
			if st := cmd.ProcessState; st == nil || st.ExitCode() != -1 {
				t.Fatalf("the batch was not killed: %v", st)
			}
			if n := appendsOf(t, logPath)["t01"]; n != c.ranBefore {
				t.Fatalf("t01 ran %d times before the resume, want %d", n, c.ranBefore)
			}
			if r := batchRunEnv(t, env, "gc"); r.code != 0 {
				t.Fatalf("gc: %d %s", r.code, r.stderr)
			}

			r := batchRunEnv(t, env, append(args, "--resume", "--json")...)
			var sum resumeSummary
			if err := json.Unmarshal([]byte(r.stdout), &sum); err != nil {
				t.Fatalf("resume: exit %d, summary %v: %q %s", r.code, err, r.stdout, r.stderr)
			}
			status := map[string]string{}
			for _, tk := range sum.Tasks {
				status[tk.ID] = tk.Status
			}
			wantCode := 0
			if c.interrupted {
				wantCode = 1
				if status["t01"] != "interrupted" {
					t.Errorf("t01: status %q, want interrupted (%+v)", status["t01"], sum)
				}
				// The resume says what it skipped and which flag runs it.
				if !strings.Contains(r.stderr, "1 interrupted (t01: its session started but never ended") || !strings.Contains(r.stderr, "--rerun-interrupted runs it again") {
					t.Errorf("the resume does not say it skipped t01 and that --rerun-interrupted runs it:\n%s", r.stderr)
				}
			} else if status["t01"] != "ok" {
				t.Errorf("t01: status %q, want ok (%+v)", status["t01"], sum)
			}
			if r.code != wantCode || status["t00"] != "ok" || status["t02"] != "ok" {
				t.Errorf("resume: exit %d (want %d), summary %+v\n%s", r.code, wantCode, sum, r.stderr)
			}
			if n := appendsOf(t, logPath)["t01"]; n != c.ranBefore {
				t.Errorf("t01 ran %d times after the resume, want %d", n, c.ranBefore)
			}
			if c.interrupted {
				r = batchRunEnv(t, env, append(args, "--resume", "--rerun-interrupted", "--json")...)
				if r.code != 0 {
					t.Errorf("--rerun-interrupted: exit %d\n%s", r.code, r.stderr)
				}
				if n := appendsOf(t, logPath)["t01"]; n != c.ranBefore+1 {
					t.Errorf("t01 ran %d times after --rerun-interrupted, want %d", n, c.ranBefore+1)
				}
			}
			counts := appendsOf(t, logPath)
			if counts["t00"] != 1 || counts["t02"] != 1 {
				t.Errorf("the other tasks ran %v times, want once each", counts)
			}
			seen := map[string]bool{}
			for _, l := range readBatchLines(t, filepath.Join(out, "results.jsonl")) {
				if seen[l.ID] {
					t.Errorf("task %s has two results lines", l.ID)
				}
				seen[l.ID] = true
			}
			if len(seen) != 3 && !c.interrupted {
				t.Errorf("results lines for %v, want t00, t01, t02", seen)
			}
		})
	}
}
