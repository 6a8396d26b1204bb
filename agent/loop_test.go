package agent_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentbox/agentbox/agent"
	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/sandbox"
)

// recorder wraps a model and keeps a copy of every request.
type recorder struct {
	agent.Model
	mu   sync.Mutex
	reqs []agent.Request
}

func (r *recorder) Complete(ctx context.Context, req agent.Request) (agent.Response, error) {
	r.mu.Lock()
	cp := req
	cp.Messages = append([]agent.Message(nil), req.Messages...)
	r.reqs = append(r.reqs, cp)
	r.mu.Unlock()
	return r.Model.Complete(ctx, req)
}

func runCfg(t testing.TB, tools *agent.Tools, m agent.Model, task string) agent.RunConfig {
	return agent.RunConfig{Task: task, Model: m, Tools: tools}
}

func TestRunDemoScriptWithFakeSession(t *testing.T) {
	tools, fs, path := newTools(t)
	fs.exec = func(_ context.Context, cmd string) (sandbox.ExecResult, error) {
		return execResult(0, []byte("3\n")), nil
	}
	s, err := agent.LoadScript("../examples/demo.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	cfg := runCfg(t, tools, agent.NewScripted("demo.yaml", s), "count the Python files")
	cfg.Events = &agent.Printer{W: &out}
	res, err := run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != agent.StatusOK || res.Steps != 3 || !strings.Contains(res.Answer, "3 Python files") || res.SessionID != "fake-session" {
		t.Errorf("result = %+v", res)
	}
	if string(fs.files["count.txt"]) != "3\n" {
		t.Errorf("count.txt = %q", fs.files["count.txt"])
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if !strings.HasPrefix(lines[0], "[1/30] execute_bash  find . -name '*.py' | wc -l") || !strings.Contains(lines[0], "allow commands.allow[") || !strings.Contains(lines[0], "exit 0") {
		t.Errorf("first line = %q", lines[0])
	}
	if lines[1] != "       3" || !strings.HasPrefix(lines[2], "[2/30] write_file") || lines[len(lines)-1] != "[3/30] done: There are 3 Python files; the count is in count.txt." {
		t.Errorf("printer output:\n%s", out.String())
	}
	recs := readAudit(t, path)
	if recs[0].Event != audit.EventSessionStart || recs[0].Task != "count the Python files" || recs[0].ContainerID != "c0ffee" ||
		recs[0].Model != "script:demo.yaml" || recs[0].PolicySHA256 != "abc" || recs[0].Version != "test" {
		t.Errorf("session_start = %+v", recs[0])
	}
	end := recs[len(recs)-1]
	if end.Event != audit.EventSessionEnd || end.Status != "ok" || end.Steps != 3 || !strings.Contains(end.Answer, "3 Python files") {
		t.Errorf("session_end = %+v", end)
	}
	if mc := events(recs, audit.EventModelCall); len(mc) != 3 || mc[2].Step != 3 || mc[0].PromptTokens == 0 {
		t.Errorf("model calls = %+v", mc)
	}
}

func TestRunStepLimit(t *testing.T) {
	tools, _, path := newTools(t)
	var y strings.Builder
	y.WriteString("turns:\n")
	for range 5 {
		y.WriteString("  - tool_calls: [{name: execute_bash, args: {command: \"true\"}}]\n")
	}
	cfg := runCfg(t, tools, script(t, y.String()), "loop forever")
	cfg.MaxSteps = 3
	res, err := run(context.Background(), cfg)
	if !errors.Is(err, agent.ErrStepLimit) || res.Status != agent.StatusStepLimit || res.Steps != 3 {
		t.Fatalf("res %+v err %v", res, err)
	}
	recs := readAudit(t, path)
	if end := recs[len(recs)-1]; end.Status != "step_limit" || end.Steps != 3 {
		t.Errorf("session_end = %+v", end)
	}
	if n := len(events(recs, audit.EventToolCall)); n != 6 {
		t.Errorf("%d tool_call records, want 6 (3 calls x 2)", n)
	}
}

func TestRunEmptyReplyNudgesOnceThenFails(t *testing.T) {
	tools, _, _ := newTools(t)
	m := &recorder{Model: script(t, "turns:\n  - {}\n  - content: done\n")}
	res, err := run(context.Background(), runCfg(t, tools, m, "task"))
	if err != nil || res.Answer != "done" || res.Steps != 2 {
		t.Fatalf("res %+v err %v", res, err)
	}
	last := m.reqs[1].Messages[len(m.reqs[1].Messages)-1]
	if last.Role != agent.RoleUser || !strings.Contains(last.Content, "empty") {
		t.Errorf("nudge = %+v", last)
	}

	tools, _, _ = newTools(t)
	res, err = run(context.Background(), runCfg(t, tools, script(t, "turns:\n  - {}\n  - {content: \"  \"}\n  - content: never\n"), "task"))
	if !errors.Is(err, agent.ErrEmptyReply) || res.Status != agent.StatusError {
		t.Fatalf("res %+v err %v", res, err)
	}
}

func TestRunScriptExhausted(t *testing.T) {
	tools, _, _ := newTools(t)
	res, err := run(context.Background(), runCfg(t, tools, script(t, "turns:\n  - tool_calls: [{name: execute_bash, args: {command: ls}}]\n"), "task"))
	if !errors.Is(err, agent.ErrScriptExhausted) || res.Status != agent.StatusError || !strings.Contains(err.Error(), "add turns") {
		t.Fatalf("res %+v err %v", res, err)
	}
}

func TestRunSessionTimeoutAndInterrupt(t *testing.T) {
	slow := func(ctx context.Context, cmd string) (sandbox.ExecResult, error) {
		<-ctx.Done()
		return sandbox.ExecResult{}, errors.Join(sandbox.ErrClosed, ctx.Err())
	}
	y := "turns:\n  - tool_calls: [{name: execute_bash, args: {command: \"sleep 100\"}}]\n  - content: done\n"

	tools, fs, path := newTools(t)
	fs.exec = slow
	cfg := runCfg(t, tools, script(t, y), "task")
	cfg.SessionTimeout = 50 * time.Millisecond
	res, err := run(context.Background(), cfg)
	if !errors.Is(err, agent.ErrSessionTimeout) || res.Status != agent.StatusTimeout {
		t.Fatalf("timeout: res %+v err %v", res, err)
	}
	recs := readAudit(t, path)
	if end := recs[len(recs)-1]; end.Event != audit.EventSessionEnd || end.Status != "timeout" {
		t.Errorf("session_end = %+v", end)
	}

	tools, fs, _ = newTools(t)
	fs.exec = slow
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(50 * time.Millisecond); cancel() }()
	res, err = run(ctx, runCfg(t, tools, script(t, y), "task"))
	if !errors.Is(err, context.Canceled) || res.Status != agent.StatusInterrupted {
		t.Fatalf("interrupt: res %+v err %v", res, err)
	}
}

func TestRunPlan(t *testing.T) {
	tools, fs, _ := newTools(t)
	y := `turns:
  - content: '{"steps": ["look around", "write the file", "check it"]}'
  - tool_calls: [{name: execute_bash, args: {command: ls}}]
  - content: looked
  - tool_calls: [{name: write_file, args: {path: out.txt, content: "x"}}]
  - content: wrote
  - content: all good
`
	m := &recorder{Model: script(t, y)}
	var out bytes.Buffer
	cfg := runCfg(t, tools, m, "make out.txt")
	cfg.Plan = true
	cfg.Events = &agent.Printer{W: &out}
	res, err := run(context.Background(), cfg)
	if err != nil || res.Answer != "all good" || len(res.Plan) != 3 || res.Steps != 5 {
		t.Fatalf("res %+v err %v", res, err)
	}
	if string(fs.files["out.txt"]) != "x" {
		t.Errorf("out.txt not written")
	}
	// One history: the last request holds every step.
	last := m.reqs[len(m.reqs)-1].Messages
	var joined strings.Builder
	for _, msg := range last {
		joined.WriteString(msg.Content + "\n")
	}
	for _, want := range []string{"1. look around", "Step 1 of 3: look around", "looked", "Step 3 of 3 (the last): check it"} {
		if !strings.Contains(joined.String(), want) {
			t.Errorf("history lacks %q", want)
		}
	}
	if !strings.Contains(out.String(), "step 1/3 done: looked") || !strings.Contains(out.String(), "plan:\n  1. look around") {
		t.Errorf("printer:\n%s", out.String())
	}

	// A bad plan falls back to the whole task.
	tools, _, _ = newTools(t)
	m = &recorder{Model: script(t, "turns:\n  - content: sure, I will do it\n  - content: did it\n")}
	cfg = runCfg(t, tools, m, "the whole task")
	cfg.Plan = true
	res, err = run(context.Background(), cfg)
	if err != nil || res.Answer != "did it" || res.Plan != nil {
		t.Fatalf("fallback: res %+v err %v", res, err)
	}
	if msgs := m.reqs[1].Messages; msgs[len(msgs)-1].Content != "the whole task" {
		t.Errorf("fallback request = %+v", msgs)
	}
}

func TestRunMemoryAndProjectInstructions(t *testing.T) {
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "AGENTS.md"), []byte("Always run make test.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	mem := &agent.Memory{Path: filepath.Join(t.TempDir(), "state", "mem.jsonl")}
	for i, task := range []string{"first task", "second task"} {
		tools, _, _ := newTools(t)
		m := &recorder{Model: script(t, "turns:\n  - content: answer "+task+"\n")}
		cfg := runCfg(t, tools, m, task)
		cfg.Workspace, cfg.Memory = ws, mem
		if _, err := run(context.Background(), cfg); err != nil {
			t.Fatal(err)
		}
		sys := m.reqs[0].Messages[0].Content
		if !strings.Contains(sys, "<<<BEGIN AGENTS.md>>>\nAlways run make test.\n<<<END AGENTS.md>>>") || !strings.Contains(sys, "UNTRUSTED") {
			t.Errorf("system prompt lacks AGENTS.md:\n%s", sys)
		}
		if has := strings.Contains(sys, "task: first task -> answer first task"); has != (i == 1) {
			t.Errorf("run %d: memory in prompt = %v:\n%s", i, has, sys)
		}
	}
	fi, err := os.Stat(mem.Path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("memory file: %v %v", fi, err)
	}
}

func TestRunFilesChanged(t *testing.T) {
	ws := t.TempDir()
	os.WriteFile(filepath.Join(ws, "keep.txt"), []byte("same"), 0o644)
	os.WriteFile(filepath.Join(ws, "edit.txt"), []byte("old"), 0o644)
	os.WriteFile(filepath.Join(ws, "gone.txt"), []byte("bye"), 0o644)
	tools, fs, path := newTools(t)
	fs.exec = func(context.Context, string) (sandbox.ExecResult, error) {
		os.WriteFile(filepath.Join(ws, "edit.txt"), []byte("new"), 0o644)
		os.WriteFile(filepath.Join(ws, "new.txt"), []byte("hi"), 0o644)
		os.Remove(filepath.Join(ws, "gone.txt"))
		return execResult(0, nil), nil
	}
	cfg := runCfg(t, tools, script(t, "turns:\n  - tool_calls: [{name: execute_bash, args: {command: ls}}]\n  - content: ok\n"), "task")
	cfg.Workspace = ws
	res, err := run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range res.FilesChanged {
		got = append(got, f.Path+":"+f.Change)
	}
	if strings.Join(got, " ") != "edit.txt:modified gone.txt:deleted new.txt:added" {
		t.Errorf("files changed = %v", got)
	}
	recs := readAudit(t, path)
	if end := recs[len(recs)-1]; len(end.Files) != 3 || end.Files[2].SHA256 == "" {
		t.Errorf("session_end files = %+v", end.Files)
	}
}

func TestRunElidesOldOutputs(t *testing.T) {
	tools, fs, _ := newTools(t)
	tools.OutputCap = 64 << 10
	n := 0
	fs.exec = func(context.Context, string) (sandbox.ExecResult, error) {
		n++
		return execResult(0, []byte(strings.Repeat(string(rune('a'+n)), 20000))), nil
	}
	var y strings.Builder
	y.WriteString("turns:\n")
	for range 6 {
		y.WriteString("  - tool_calls: [{name: execute_bash, args: {command: ls}}]\n")
	}
	y.WriteString("  - content: done\n")
	m := &recorder{Model: script(t, y.String())}
	cfg := runCfg(t, tools, m, "task")
	cfg.ContextBudget = 12000 // ~48 KB: room for two outputs
	if _, err := run(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	last := m.reqs[len(m.reqs)-1].Messages
	var tool []agent.Message
	for _, msg := range last {
		if msg.Role == agent.RoleTool {
			tool = append(tool, msg)
		}
	}
	if len(tool) != 6 {
		t.Fatalf("%d tool messages", len(tool))
	}
	if !strings.HasPrefix(tool[0].Content, "[output elided by agentbox to save context; 20000 bytes, sha256 ") || !strings.Contains(tool[0].Content, "full output is in the audit log") {
		t.Errorf("oldest output not elided: %.120q", tool[0].Content)
	}
	if !strings.Contains(tool[5].Content, strings.Repeat("g", 20000)) {
		t.Errorf("latest output not kept whole")
	}
	if total := len(last[0].Content); total == 0 {
		t.Error("no system prompt")
	}
}

func TestRunParallelCallsAnsweredInOrder(t *testing.T) {
	tools, _, _ := newTools(t)
	y := `turns:
  - tool_calls:
      - {id: a, name: execute_bash, args: {command: "echo 1"}}
      - {id: b, name: nope, args: {}}
      - {id: c, name: execute_bash, arguments: '{"command": '}
      - {id: d, name: execute_bash, args: {command: "curl http://x"}}
  - content: done
`
	m := &recorder{Model: script(t, y)}
	if _, err := run(context.Background(), runCfg(t, tools, m, "task")); err != nil {
		t.Fatal(err)
	}
	msgs := m.reqs[1].Messages
	// system, user, assistant (4 calls), then 4 tool messages in order.
	if len(msgs) != 7 || msgs[2].Role != agent.RoleAssistant || len(msgs[2].ToolCalls) != 4 {
		t.Fatalf("messages = %+v", msgs)
	}
	for i, id := range []string{"a", "b", "c", "d"} {
		if msgs[3+i].Role != agent.RoleTool || msgs[3+i].ToolCallID != id {
			t.Errorf("message %d = %+v", 3+i, msgs[3+i])
		}
	}
	if !strings.Contains(msgs[4].Content, "no tool named") || !strings.Contains(msgs[5].Content, "invalid arguments") || !strings.Contains(msgs[6].Content, "denied by policy") {
		t.Errorf("tool messages: %q / %q / %q", msgs[4].Content, msgs[5].Content, msgs[6].Content)
	}
}
