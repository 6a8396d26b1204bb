package batch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/agent"
	"github.com/agentbox/agentbox/agent/agenttest"
	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/internal/testutil"
	"github.com/agentbox/agentbox/internal/testutil/treestate"
)

// Twenty tasks at concurrency 4, half through the real go-openai client
// against one chat-completions endpoint, half scripted. Several tasks share
// a source directory and change the same file: each output must hold
// exactly its own changes, and no source may change.
func TestBatchTwentyTasksIsolated(t *testing.T) {
	root := t.TempDir()
	var srcs []string
	for i := range 4 {
		src := filepath.Join(root, fmt.Sprintf("src%d", i))
		writeFile(t, filepath.Join(src, "shared.txt"), "original\n")
		writeFile(t, filepath.Join(src, "doomed.txt"), "delete me\n")
		writeFile(t, filepath.Join(src, "sub", "keep.txt"), "keep\n")
		if err := os.Symlink("/etc/passwd", filepath.Join(src, "outside")); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(filepath.Join(src, "sub", "keep.txt"), 0o600); err != nil {
			t.Fatal(err)
		}
		srcs = append(srcs, src)
	}
	before := map[string]map[string]string{}
	for _, s := range srcs {
		before[s] = treestate.Of(t, s)
	}

	routes := map[string][]agenttest.Reply{}
	var tasks []Task
	for i := range 20 {
		id := fmt.Sprintf("task-%02d", i)
		// Every task writes its own file and rewrites shared.txt; odd tasks
		// also delete doomed.txt.
		cmd := fmt.Sprintf("echo %s > own-%s.txt && echo %s > shared.txt", id, id, id)
		if i%2 == 1 {
			cmd += " && rm -f doomed.txt"
		}
		text := fmt.Sprintf("job %s: leave your mark", id)
		tk := Task{ID: id, Task: text, Workspace: srcs[i%4], Line: i + 1}
		if i < 10 {
			routes["job "+id+":"] = []agenttest.Reply{
				agenttest.Tools(agenttest.Bash(cmd)),
				agenttest.Answer("done " + id),
			}
		} else {
			tk.Script, tk.ScriptPath = script(bash(cmd), answer("done "+id)), id+".yaml"
		}
		tasks = append(tasks, tk)
	}
	router := agenttest.NewRouter(t, routes)
	cfg, w, cli := testConfig(t, tasks)
	cfg.Concurrency = 4
	cfg.Approver = agent.AllowAll{} // rm is an "ask" in the default policy
	cfg.Model = agent.Config{BaseURL: router.URL(), APIKey: "test-key", Model: "fake"}

	sum, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !sum.AllOK() || sum.Ran != 20 || sum.OK != 20 {
		t.Fatalf("summary: %+v", sum)
	}
	lines := readLines(t, filepath.Join(cfg.Output, "results.jsonl"))
	if len(lines) != 20 {
		t.Fatalf("%d results lines, want 20", len(lines))
	}
	var sessions []string
	for _, l := range lines {
		sessions = append(sessions, l.Session)
		i := 0
		fmt.Sscanf(l.ID, "task-%02d", &i)
		want := []string{"own-" + l.ID + ".txt", "shared.txt"}
		if i%2 == 1 {
			want = append(want, "doomed.txt")
		}
		sort.Strings(want)
		var got []string
		for _, c := range l.FilesChanged {
			got = append(got, c.Path)
		}
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("%s: files changed %v, want %v", l.ID, got, want)
		}
		out := filepath.Join(cfg.Output, l.ID)
		for _, f := range []string{"own-" + l.ID + ".txt", "shared.txt"} {
			if b, err := os.ReadFile(filepath.Join(out, FilesDir, f)); err != nil || string(b) != l.ID+"\n" {
				t.Errorf("%s: exported %s = %q, %v", l.ID, f, b, err)
			}
		}
		exported := treestate.Of(t, filepath.Join(out, FilesDir))
		if len(exported) != 3 { // ".", own, shared
			t.Errorf("%s: exported entries %v", l.ID, exported)
		}
		var manifest []audit.FileChange
		b, _ := os.ReadFile(filepath.Join(out, ChangesFile))
		if err := json.Unmarshal(b, &manifest); err != nil || len(manifest) != len(want) {
			t.Errorf("%s: manifest %s (%v)", l.ID, b, err)
		}
		if i%2 == 1 && (manifest[0].Path != "doomed.txt" || manifest[0].Change != audit.ChangeDeleted) {
			t.Errorf("%s: deletion not in the manifest: %+v", l.ID, manifest)
		}
		if a, _ := os.ReadFile(filepath.Join(out, AnswerFile)); string(a) != "done "+l.ID+"\n" {
			t.Errorf("%s: answer %q", l.ID, a)
		}
		if lg, _ := os.ReadFile(filepath.Join(out, LogFile)); !strings.Contains(string(lg), "execute_bash") {
			t.Errorf("%s: log excerpt %q", l.ID, lg)
		}
	}
	for _, s := range srcs {
		after := treestate.Of(t, s)
		if fmt.Sprint(after) != fmt.Sprint(before[s]) {
			t.Errorf("source %s changed:\nbefore %v\nafter  %v", s, before[s], after)
		}
	}
	for k := range routes {
		if n := router.Route(k).Served(); n != 2 {
			t.Errorf("route %q served %d replies, want 2", k, n)
		}
	}
	if _, err := os.Stat(filepath.Join(cfg.Output, workDirName)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("work directory left: %v", err)
	}
	noLeftovers(t, cli, sessions...)
	verifyAudit(t, w.Path(), 20)
}

// A failing task and one that hits its step limit do not disturb the
// others, and every status is right.
func TestBatchFailuresDoNotSpread(t *testing.T) {
	src := t.TempDir()
	writeFile(t, filepath.Join(src, "f.txt"), "x\n")
	loop := script(bash("echo 1 >> f.txt"), bash("echo 2 >> f.txt"), bash("echo 3 >> f.txt"), answer("never"))
	tasks := []Task{
		{ID: "ok1", Task: "t", Workspace: src, Script: script(bash("echo ok > a.txt"), answer("fine"))},
		{ID: "exhausted", Task: "t", Workspace: src, Script: script(bash("echo half > b.txt"))},
		{ID: "limit", Task: "t", Workspace: src, MaxSteps: 2, Script: loop},
		{ID: "http-fail", Task: "http-fail task", Workspace: src},
		{ID: "missing-image", Task: "t", Workspace: src, Script: script(answer("unreachable"))},
		{ID: "ok2", Task: "t", Workspace: src, Script: script(answer("fine too"))},
	}
	router := agenttest.NewRouter(t, map[string][]agenttest.Reply{
		"http-fail": {{Status: 401, Error: "bad key"}},
	})
	cfg, w, cli := testConfig(t, tasks)
	cfg.Model = agent.Config{BaseURL: router.URL(), APIKey: "k"}
	pol := *cfg.Policy
	pol.Sandbox.Image = "agentbox/does-not-exist:latest"
	cfg.Tasks[4].Policy = &pol
	cfg.Sandbox.Image = "" // let the task's policy pick the image
	cfg.Policy.Sandbox.Image = testutil.Image

	sum, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]struct {
		status string
		exit   int
	}{
		"ok1": {"ok", 0}, "ok2": {"ok", 0}, "exhausted": {"error", 1}, "limit": {"step_limit", 3},
		"http-fail": {"error", 1}, "missing-image": {StatusInfraFailed, 125},
	}
	lines := readLines(t, filepath.Join(cfg.Output, "results.jsonl"))
	if len(lines) != len(want) {
		t.Fatalf("%d lines", len(lines))
	}
	var sessions []string
	for _, l := range lines {
		w := want[l.ID]
		if l.Status != w.status || l.Exit != w.exit {
			t.Errorf("%s: status %s exit %d (%s), want %s %d", l.ID, l.Status, l.Exit, l.Error, w.status, w.exit)
		}
		if l.Session != "" {
			sessions = append(sessions, l.Session)
		}
	}
	if sum.OK != 2 || sum.Failed != 4 || sum.AllOK() {
		t.Errorf("summary %+v", sum)
	}
	if b, _ := os.ReadFile(filepath.Join(cfg.Output, "ok1", FilesDir, "a.txt")); string(b) != "ok\n" {
		t.Errorf("ok1's change: %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(cfg.Output, "exhausted", FilesDir, "b.txt")); string(b) != "half\n" {
		t.Errorf("a failed task's changes are exported too: %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(src, "f.txt")); string(b) != "x\n" {
		t.Errorf("source changed: %q", b)
	}
	noLeftovers(t, cli, sessions...)
	verifyAudit(t, w.Path(), 5) // the task whose sandbox never started has no session
}

// Cancelling the batch stops it with no container left, records only
// finished tasks, and Resume finishes the rest without redoing any.
func TestBatchCancelThenResume(t *testing.T) {
	src := t.TempDir()
	var tasks []Task
	for i := range 6 {
		cmd := "echo quick > q.txt"
		if i >= 2 {
			cmd = "test -e /tmp/never || sleep 600" // blocks until cancelled
		}
		tasks = append(tasks, Task{ID: fmt.Sprintf("t%d", i), Task: "t", Workspace: src, Script: script(bash(cmd), answer("ok"))})
	}
	cfg, w, cli := testConfig(t, tasks)
	results := filepath.Join(cfg.Output, "results.jsonl")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	var sum Summary
	var err error
	go func() {
		defer close(done)
		sum, err = Run(ctx, cfg)
	}()
	testutil.Eventually(t, 2*time.Minute, "two results lines and a blocking task started", func() bool {
		b, _ := os.ReadFile(results)
		j, _ := os.ReadFile(filepath.Join(cfg.Output, journalName))
		return strings.Count(string(b), "\n") >= 2 && strings.Contains(string(j), `"event":"start","id":"t2"`)
	})
	cancel()
	<-done
	if err == nil || !errors.Is(err, context.Canceled) || !sum.Interrupted || sum.Ran != 2 || sum.NotRun != 4 {
		t.Fatalf("interrupted batch: %v %+v", err, sum)
	}
	noLeftovers(t, cli)
	first := readLines(t, results)

	for i := 2; i < 6; i++ {
		cfg.Tasks[i].Script = script(bash("echo slow-done > s.txt"), answer("ok"))
	}
	// The tasks cut short in their session are interrupted: not run again
	// unless asked; the ones never started run.
	cfg.Resume = true
	cfg.AuditPath = w.Path()
	sum, err = Run(context.Background(), cfg)
	intr := sum.ByStatus[StatusInterrupted]
	if err != nil || intr == 0 || sum.Ran != 4-intr || sum.NotRun != intr {
		t.Fatalf("resume: %v %+v", err, sum)
	}
	cfg.RerunInterrupted = true
	sum, err = Run(context.Background(), cfg)
	if err != nil || !sum.AllOK() || sum.Skipped != 6-intr || sum.Ran != intr {
		t.Fatalf("resume: %v %+v", err, sum)
	}
	all := readLines(t, results)
	if len(all) != 6 || fmt.Sprint(all[:2]) != fmt.Sprint(first) {
		t.Errorf("resume rewrote or reran finished tasks: %d lines", len(all))
	}
	noLeftovers(t, cli)
	verifyAudit(t, w.Path(), 6) // plus the cancelled sessions, which ended as interrupted
}
