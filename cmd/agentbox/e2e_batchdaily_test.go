package main_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/agentbox/agentbox/agent/agenttest"
	"github.com/agentbox/agentbox/internal/testutil"
	"github.com/agentbox/agentbox/internal/textutil"
)

// modelTasks writes n tasks that call the model (no script), whose text
// has multi-byte characters, on one workspace.
func modelTasks(t *testing.T, n int) string {
	t.Helper()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "ws", "in.txt"), "in\n", 0o644)
	var b strings.Builder
	b.WriteString("tasks:\n")
	for i := range n {
		fmt.Fprintf(&b, "  - {id: t%02d, task: \"résumé: 日本語のドキュメントを直す ✓ task %d and a long tail of words\", workspace: ws}\n", i, i)
	}
	path := filepath.Join(dir, "tasks.yaml")
	writeFile(t, path, b.String(), 0o644)
	return path
}

func modelServerEnv(url string) []string {
	return []string{"OPENAI_BASE_URL=" + url + "/v1", "OPENAI_API_KEY=sk-test-0123456789abcdef", "OPENAI_MODEL=test-model"}
}

const chatAnswer = `{"id":"c1","object":"chat.completion","created":1,"model":"test-model","choices":[{"index":0,"message":{"role":"assistant","content":"done"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":1,"total_tokens":6}}`

// When the model endpoint keeps failing (500 after every retry), the batch
// stops starting tasks after three in a row: the rest are not_started in
// the summary, nothing more reaches the endpoint, the exit is 1 with one
// line saying what to do; --resume later runs exactly the rest.
func TestBatchCircuitBreaker(t *testing.T) {
	cli := testutil.RequireDocker(t)
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		w.Header().Set("Retry-After-Ms", "1") // fast retries: the test need not wait
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = w.Write([]byte(`{"error":{"message":"the model server is on fire","type":"server_error"}}`))
	}))
	t.Cleanup(srv.Close)
	tasks := modelTasks(t, 6)
	out := filepath.Join(t.TempDir(), "results")
	log := filepath.Join(t.TempDir(), "audit.jsonl")
	r := agentbox(t, modelServerEnv(srv.URL), "batch", tasks, "-j", "1", "--output", out, "--audit", log)
	if r.code != 1 {
		t.Fatalf("want exit 1, got %d:\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	last := strings.TrimSpace(r.stderr)
	last = last[strings.LastIndex(last, "\n")+1:]
	for _, w := range []string{"model endpoint failing", "HTTP 500", "3 of 6 tasks not started", "--resume"} {
		if !strings.Contains(last, w) {
			t.Errorf("last stderr line lacks %q: %q", w, last)
		}
	}
	if !strings.Contains(r.stderr, "starting no more tasks") {
		t.Errorf("no notice when the breaker tripped:\n%s", r.stderr)
	}
	if n := strings.Count(r.stdout, "not_started"); n != 3 {
		t.Errorf("summary table: %d not_started rows, want 3:\n%s", n, r.stdout)
	}
	if got := requests.Load(); got != 3*5 {
		t.Errorf("%d requests reached the endpoint, want 15 (3 tasks, 5 attempts each)", got)
	}
	lines := readBatchLines(t, filepath.Join(out, "results.jsonl"))
	if len(lines) != 3 {
		t.Fatalf("%d results lines, want 3 (not started tasks get none)", len(lines))
	}
	for i, l := range lines {
		if l.ID != fmt.Sprintf("t%02d", i) || l.Status != "error" {
			t.Errorf("line %d: %+v", i, l)
		}
	}
	var sum struct {
		Stopped string `json:"stopped"`
		NotRun  int    `json:"not_run"`
	}
	if b, err := os.ReadFile(filepath.Join(out, "summary.json")); err != nil || json.Unmarshal(b, &sum) != nil || sum.NotRun != 3 || !strings.Contains(sum.Stopped, "HTTP 500") {
		t.Errorf("summary.json: %+v %v", sum, err)
	}
	if left := ownerOf(t, cli, r.pid); left != "" {
		t.Errorf("container left (a prepared sandbox of a task not started?): %s", left)
	}

	// The endpoint works again: --resume runs the three that never started.
	ok := agenttest.New(t, agenttest.Answer("done"), agenttest.Answer("done"), agenttest.Answer("done"))
	r = agentbox(t, modelServerEnv(strings.TrimSuffix(ok.URL(), "/v1")), "batch", tasks, "--resume", "-j", "1", "--output", out, "--audit", log)
	lines = readBatchLines(t, filepath.Join(out, "results.jsonl"))
	if len(lines) != 6 || ok.Served() != 3 || !strings.Contains(r.stdout, "6 tasks: 3 ok, 3 failed, 0 not run (3 finished earlier)") {
		t.Fatalf("resume: exit %d, %d lines, %d answers served\n%s\n%s", r.code, len(lines), ok.Served(), r.stdout, r.stderr)
	}
	for _, l := range lines[3:] {
		if l.Status != "ok" {
			t.Errorf("resumed %s: %s", l.ID, l.Status)
		}
	}
}

// --json-events: one JSON object per line on stdout, task_started and
// task_finished for each task and a last end with the summary; a step
// limit set in the task file is named by its field there.
func TestBatchJSONEventsAndLimitHint(t *testing.T) {
	testutil.RequireDocker(t)
	tasks := batchFixture(t, 2, 2, "true")
	dir := filepath.Dir(tasks)
	writeFile(t, filepath.Join(dir, "long.yaml"), "turns:\n  - tool_calls: [{name: execute_bash, args: {command: \"true\"}}]\n  - tool_calls: [{name: execute_bash, args: {command: \"true\"}}]\n  - content: finished\n", 0o644)
	b, _ := os.ReadFile(tasks)
	writeFile(t, tasks, string(b)+"  - id: limited\n    task: x\n    workspace: ws\n    script: long.yaml\n    max_steps: 1\n", 0o644)
	out := filepath.Join(t.TempDir(), "results")
	r := agentbox(t, nil, "batch", tasks, "--json-events", "-j", "2", "--output", out, "--audit", filepath.Join(t.TempDir(), "a.jsonl"))
	if r.code != 1 || strings.Contains(r.stderr, "batch: [") {
		t.Fatalf("exit %d (want 1: one task hit its limit); stderr must carry no progress:\n%s", r.code, r.stderr)
	}
	started, finished := map[string]bool{}, map[string]string{}
	evs := jsonLines(t, r.stdout)
	for _, e := range evs {
		switch e["event"] {
		case "task_started":
			started[e["id"].(string)] = true
		case "task_finished":
			id := e["id"].(string)
			if !started[id] {
				t.Errorf("%s finished before it started", id)
			}
			finished[id] = e["status"].(string)
			if id == "limited" {
				res := e["result"].(map[string]any)
				hint := "raise tasks[2].max_steps in " + tasks + " (line 4)"
				if !strings.Contains(res["error"].(string), hint) {
					t.Errorf("the limit hint does not name the task file's field %q: %q", hint, res["error"])
				}
			}
		}
	}
	if len(started) != 3 || finished["t00"] != "ok" || finished["t01"] != "ok" || finished["limited"] != "step_limit" {
		t.Errorf("started %v finished %v", started, finished)
	}
	end := evs[len(evs)-1]
	sum, _ := end["summary"].(map[string]any)
	if end["event"] != "end" || end["status"] != "failed" || sum == nil || sum["total"] != float64(3) || sum["ok"] != float64(2) {
		t.Errorf("end: %v", end)
	}
}

// On a terminal the progress line fits the width (60, 160 and a narrow
// 20 columns): no line wider than the terminal, none wrapped, no broken
// character, although the running task's text is multi-byte and long.
func TestBatchProgressOnTerminal(t *testing.T) {
	testutil.RequireDocker(t)
	for _, width := range []int{20, 60, 160} {
		t.Run(strconv.Itoa(width), func(t *testing.T) { batchProgressAt(t, width) })
	}
}

func batchProgressAt(t *testing.T, width int) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select { // the first task waits until the test has seen its line
		case <-release:
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(chatAnswer))
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
	})
	tasks := modelTasks(t, 3)
	dir := t.TempDir()
	stdout := filepath.Join(dir, "table.txt")
	var env []string
	for _, e := range append(baseEnv(t), modelServerEnv(srv.URL)...) {
		if !strings.HasPrefix(e, "NO_COLOR=") {
			env = append(env, e)
		}
	}
	env = append(env, "TERM=xterm-256color")
	line := "env -i " + shellJoin(env) + " " + shellJoin([]string{testutil.Binary(t), "batch", tasks, "-j", "1",
		"--output", filepath.Join(dir, "results"), "--audit", filepath.Join(dir, "a.jsonl")}) + " > " + shellJoin([]string{stdout}) + "; echo EXIT=$?; sleep 600"
	p := &tmuxPane{t: t, sock: "abbatch" + strconv.Itoa(os.Getpid()) + "w" + strconv.Itoa(width)}
	p.tmux("new-session", "-d", "-x", strconv.Itoa(width), "-y", "30", line)
	t.Cleanup(func() { _ = exec.Command("tmux", "-L", p.sock, "kill-server").Run() })

	check := func(when string) string {
		joined, rows := p.tmux("capture-pane", "-p", "-J"), p.tmux("capture-pane", "-p")
		t.Logf("%s:\n%s", when, strings.TrimRight(joined, "\n"))
		if strings.Count(joined, "\n") != strings.Count(rows, "\n") {
			t.Errorf("%s: a line wrapped at %d columns:\n%s", when, width, rows)
		}
		for _, l := range strings.Split(joined, "\n") {
			if w := textutil.Width(l); w > width || !utf8.ValidString(l) || strings.ContainsRune(l, utf8.RuneError) {
				t.Errorf("%s: %q is %d columns wide (terminal %d) or broken", when, l, w, width)
			}
		}
		return joined
	}
	want := "0/3  ok 0"
	if width >= 60 {
		want = "▸ t00: résumé: 日本語"
	}
	testutil.Eventually(t, 2*time.Minute, "the progress line", func() bool {
		return strings.Contains(p.tmux("capture-pane", "-p", "-J"), want)
	})
	check("while t00 runs")
	close(release)
	pane := p.wait("EXIT=")
	check("at the end")
	if !strings.Contains(pane, "EXIT=0") || strings.Count(pane, "ok ") != 1 {
		t.Errorf("one final progress line and exit 0 expected:\n%s", pane)
	}
	if b, _ := os.ReadFile(stdout); !strings.Contains(string(b), "3 tasks: 3 ok") {
		t.Errorf("summary table on stdout: %q", b)
	}
}
