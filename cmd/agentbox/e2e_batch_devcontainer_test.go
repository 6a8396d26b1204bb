package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/internal/testutil"
)

// A batch task with devcontainer: true runs in the image its workspace's
// Dockerfile builds, with its containerEnv, and its postCreateCommand is
// the task's first tool call (setup_1) in the audit log; a task without it
// in the same batch is untouched by it.
func TestBatchDevcontainer(t *testing.T) {
	testutil.RequireDocker(t)
	dir := t.TempDir()
	dc := filepath.Join(dir, "dc")
	writeFile(t, filepath.Join(dc, ".devcontainer", "Dockerfile"), "FROM agentbox/base:latest\nRUN echo from-the-batch-dockerfile > /etc/devc-batch\n", 0o644)
	writeFile(t, filepath.Join(dc, ".devcontainer", "devcontainer.json"), `{
  "build": {"dockerfile": "Dockerfile"},
  "containerEnv": {"DEVC_GREETING": "hello-batch"},
  "postCreateCommand": "echo created > /workspace/post-create.txt",
}`, 0o644)
	plain := filepath.Join(dir, "plain")
	writeFile(t, filepath.Join(plain, "in.txt"), "in\n", 0o644)
	script := `cat /etc/devc-batch > out.txt 2>&1; echo \"env=$DEVC_GREETING\" >> out.txt; cat post-create.txt >> out.txt 2>&1; true`
	writeFile(t, filepath.Join(dir, "s.yaml"), "turns:\n  - tool_calls: [{name: execute_bash, args: {command: \""+script+"\"}}]\n  - content: finished\n", 0o644)
	writeFile(t, filepath.Join(dir, "policy.yaml"), "version: 1\nextends: none\ncommands:\n  default: allow\n  dynamic: allow\nfiles:\n  write:\n    allow: [\"/workspace/**\"]\n", 0o644)
	tasks := writeFile(t, filepath.Join(dir, "tasks.yaml"), `tasks:
  - {id: dc, task: build it, workspace: dc, script: s.yaml, policy: policy.yaml, devcontainer: true}
  - {id: plain, task: build it, workspace: plain, script: s.yaml, policy: policy.yaml}
`, 0o644)
	out := filepath.Join(t.TempDir(), "results")
	log := filepath.Join(t.TempDir(), "audit.jsonl")
	r := agentbox(t, nil, "batch", tasks, "--output", out, "--audit", log, "--no-pool")
	if r.code != 0 {
		t.Fatalf("batch: %d %s %s", r.code, r.stdout, r.stderr)
	}
	got := func(id string) string {
		b, err := os.ReadFile(filepath.Join(out, id, "files", "out.txt"))
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		return string(b)
	}
	if s := got("dc"); s != "from-the-batch-dockerfile\nenv=hello-batch\ncreated\n" {
		t.Errorf("devcontainer task's out.txt: %q", s)
	}
	if s := got("plain"); strings.Contains(s, "from-the-batch-dockerfile") || strings.Contains(s, "hello-batch") || strings.Contains(s, "created") {
		t.Errorf("the plain task saw the devcontainer: %q", s)
	}
	calls := map[string][]string{} // task id -> tool calls
	ids := map[string]string{}     // session -> task id
	for _, l := range readAuditLog(t, log) {
		if l.rec.Event == "session_start" {
			ids[l.rec.Session] = l.rec.TaskID
		}
		if l.rec.Event == "tool_call" && l.rec.Phase == "decision" {
			cmd, _ := l.rec.Args["command"].(string)
			calls[ids[l.rec.Session]] = append(calls[ids[l.rec.Session]], l.rec.CallID+": "+cmd)
		}
	}
	if c := calls["dc"]; len(c) != 2 || c[0] != "setup_1: echo created > /workspace/post-create.txt" {
		t.Errorf("devcontainer task's tool calls: %q; want the postCreateCommand as setup_1 first", c)
	}
	if c := calls["plain"]; len(c) != 1 {
		t.Errorf("plain task's tool calls: %q", c)
	}
	batchVerifyLog(t, log)
}

// A devcontainer.json with a field that would loosen the sandbox fails
// the task file's validation: the field is named with the task's line,
// and nothing starts.
func TestBatchDevcontainerRefused(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "ws", ".devcontainer.json"), `{"image": "agentbox/base:latest", "capAdd": ["SYS_ADMIN"]}`, 0o644)
	writeFile(t, filepath.Join(dir, "ok", "f"), "", 0o644)
	tasks := writeFile(t, filepath.Join(dir, "tasks.yaml"), "tasks:\n  - {id: ok, task: t, workspace: ok, devcontainer: false}\n  - {id: bad, task: t, workspace: ws, devcontainer: true}\n  - {id: none, task: t, workspace: ok, devcontainer: true}\n", 0o644)
	out := filepath.Join(dir, "results")
	r := agentbox(t, nil, "batch", tasks, "--output", out)
	if r.code != 2 {
		t.Fatalf("want exit 2, got %d: %s", r.code, r.stderr)
	}
	for _, want := range []string{tasks + ":3: tasks[1].devcontainer:", "capAdd: the sandbox runs with no capabilities",
		tasks + ":4: tasks[2].devcontainer:", "no .devcontainer/devcontainer.json or .devcontainer.json", "nothing was started"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	if strings.Contains(r.stderr, "tasks[0]") {
		t.Errorf("devcontainer: false was checked:\n%s", r.stderr)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Error("output created for an invalid batch")
	}
}
