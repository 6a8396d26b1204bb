package main_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentbox/agentbox/agent/agenttest"
	"github.com/agentbox/agentbox/internal/testutil"
)

// modelEnv points the binary's go-openai client at srv with key.
func modelEnv(srv *agenttest.Server, key string) []string {
	return []string{"OPENAI_BASE_URL=" + srv.URL(), "OPENAI_API_KEY=" + key, "OPENAI_MODEL=test-model"}
}

func newKey(t *testing.T) string { return "sk-test-" + randomHex(t, 16) }

// runJSON is `agentbox run --json`'s output.
type runJSON struct {
	Status           string `json:"status"`
	Answer           string `json:"answer"`
	Steps            int    `json:"steps"`
	PromptTokens     int    `json:"prompt_tokens"`
	CompletionTokens int    `json:"completion_tokens"`
	Session          string `json:"session"`
	FilesChanged     []struct {
		Path   string `json:"path"`
		SHA256 string `json:"sha256"`
		Bytes  int64  `json:"bytes"`
		Change string `json:"change"`
	} `json:"files_changed"`
	Error string `json:"error"`
}

// TestRunWithModelServer: the real go-openai client against a fake
// endpoint: execute_bash, then write_file, then the answer.
func TestRunWithModelServer(t *testing.T) {
	cli := testutil.RequireDocker(t)
	key := newKey(t)
	srv := agenttest.New(t,
		agenttest.Tools(agenttest.Bash("ls; echo from-bash > made-by-bash.txt")),
		agenttest.Tools(agenttest.Write("notes/out.txt", "hello from the model\n")),
		agenttest.Answer("Done: wrote notes/out.txt."),
	)
	srv.Key = key
	ws := t.TempDir()
	writeFile(t, filepath.Join(ws, "existing.txt"), "x\n", 0o644)
	log := filepath.Join(t.TempDir(), "audit.jsonl")

	r := agentbox(t, modelEnv(srv, key), "run", "--no-memory", "--json", "--workspace", ws, "--audit", log, "write the notes")
	if r.code != 0 {
		t.Fatalf("run: %d %q %q", r.code, r.stdout, r.stderr)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "notes", "out.txt")); err != nil || string(b) != "hello from the model\n" {
		t.Errorf("write_file did not reach the workspace: %q %v", b, err)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "made-by-bash.txt")); err != nil || string(b) != "from-bash\n" {
		t.Errorf("execute_bash did not run in the workspace: %q %v", b, err)
	}
	var j runJSON
	if err := json.Unmarshal([]byte(r.stdout), &j); err != nil {
		t.Fatalf("--json: %v: %q", err, r.stdout)
	}
	if j.Status != "ok" || j.Steps != 3 || j.Answer != "Done: wrote notes/out.txt." || len(j.Session) < 8 || j.PromptTokens <= 0 || j.CompletionTokens != 30 {
		t.Errorf("--json: %+v", j)
	}
	changed := map[string]string{}
	for _, f := range j.FilesChanged {
		changed[f.Path] = f.Change
		if f.Path == "notes/out.txt" && f.SHA256 != sha256Hex([]byte("hello from the model\n")) {
			t.Errorf("files_changed sha256 of notes/out.txt: %s", f.SHA256)
		}
	}
	if changed["notes/out.txt"] != "added" || changed["made-by-bash.txt"] != "added" || len(changed) != 2 {
		t.Errorf("files_changed: %+v", j.FilesChanged)
	}
	if left := ownerOf(t, cli, r.pid); left != "" {
		t.Errorf("container %s left behind", left)
	}

	// What the model saw: the tool results of the real session.
	reqs := srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("the server saw %d requests, want 3", len(reqs))
	}
	if got := reqs[0].Header.Get("Authorization"); got != "Bearer "+key {
		t.Errorf("Authorization header %q", got)
	}
	if reqs[0].Request.Model != "test-model" {
		t.Errorf("model %q, want OPENAI_MODEL", reqs[0].Request.Model)
	}
	last := reqs[1].Request.Messages[len(reqs[1].Request.Messages)-1]
	if last.Role != "tool" || !strings.Contains(last.Content, "existing.txt") {
		t.Errorf("the ls result was not handed back to the model: %+v", last)
	}

	// The audit log verifies and records the model calls with tokens.
	if v, _ := verifyLog(t, nil, log); v.code != 0 {
		t.Errorf("verify: %d %q", v.code, v.stdout)
	}
	recs := sessionRecords(readAuditLog(t, log), j.Session)
	var models, tools int
	for _, rec := range recs {
		switch rec.Event {
		case "model_call":
			models++
			if rec.Step != models || rec.PromptTokens <= 0 || rec.CompletionTokens != 10 || rec.TotalTokens != rec.PromptTokens+rec.CompletionTokens {
				t.Errorf("model_call: %+v", rec)
			}
		case "tool_call":
			tools++
		}
	}
	if models != 3 || tools != 4 {
		t.Errorf("%d model_call and %d tool_call records, want 3 and 4: %v", models, tools, events(recs))
	}
	if recs[0].Event != "session_start" || recs[0].Model != "test-model" || recs[0].ContainerID == "" {
		t.Errorf("session_start: %+v", recs[0])
	}
	end := recs[len(recs)-1]
	if end.Event != "session_end" || end.Status != "ok" || end.Steps != 3 || len(end.Files) != 2 {
		t.Errorf("session_end: %+v", end)
	}
}

// TestRunStepLimit: a model that never answers is stopped by --max-steps
// with exit 3 and a clear message.
func TestRunStepLimit(t *testing.T) {
	cli := testutil.RequireDocker(t)
	key := newKey(t)
	var replies []agenttest.Reply
	for i := 0; i < 5; i++ {
		replies = append(replies, agenttest.Tools(agenttest.Bash("true")))
	}
	srv := agenttest.New(t, replies...)
	log := filepath.Join(t.TempDir(), "audit.jsonl")
	r := agentbox(t, modelEnv(srv, key), "run", "--no-memory", "--max-steps", "2", "--workspace", t.TempDir(), "--audit", log, "loop forever")
	t.Logf("stderr: %s", r.stderr)
	if r.code != 3 || !strings.Contains(r.stderr, "step limit") || !strings.Contains(r.stderr, "--max-steps") {
		t.Errorf("want exit 3 naming the step limit, got %d %q", r.code, r.stderr)
	}
	if n := len(srv.Requests()); n != 2 {
		t.Errorf("the model was called %d times, want 2", n)
	}
	if left := ownerOf(t, cli, r.pid); left != "" {
		t.Errorf("container %s left behind", left)
	}
	lines := readAuditLog(t, log)
	if end := lines[len(lines)-1].rec; end.Event != "session_end" || end.Status != "step_limit" {
		t.Errorf("last record: %+v", end)
	}
	r = agentbox(t, modelEnv(srv, key), "run", "--max-steps", "0", "--workspace", t.TempDir(), "x")
	if r.code != 2 {
		t.Errorf("--max-steps 0: %d %q", r.code, r.stderr)
	}
}

// TestRunUnauthorized: a 401 is one clear line, exit 1, no retry.
func TestRunUnauthorized(t *testing.T) {
	cli := testutil.RequireDocker(t)
	srv := agenttest.New(t, agenttest.Answer("never"))
	srv.Key = newKey(t)
	wrong := newKey(t)
	log := filepath.Join(t.TempDir(), "audit.jsonl")
	r := agentbox(t, modelEnv(srv, wrong), "run", "--no-memory", "--workspace", t.TempDir(), "--audit", log, "do something")
	t.Logf("stderr: %s", r.stderr)
	if r.code != 1 {
		t.Errorf("exit %d, want 1: %q", r.code, r.stderr)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("the server saw %d requests, want 1 (no retry on 401)", n)
	}
	// The error is said once: by the step printer, or as "agentbox: ..."
	// when the printer is quiet.
	var errLines []string
	for _, l := range strings.Split(strings.TrimSpace(r.stderr), "\n") {
		if strings.HasPrefix(l, "agentbox: ") || strings.Contains(l, "stopped (error)") {
			errLines = append(errLines, l)
		}
	}
	if len(errLines) != 1 || !strings.Contains(errLines[0], "401") && !strings.Contains(strings.ToLower(errLines[0]), "key") {
		t.Errorf("want one clear error line about the key, got %q", r.stderr)
	}
	if strings.Contains(r.stdout+r.stderr, wrong) {
		t.Errorf("the API key reached the terminal: %q", r.stderr)
	}
	if left := ownerOf(t, cli, r.pid); left != "" {
		t.Errorf("container %s left behind", left)
	}
	if data, _ := os.ReadFile(log); bytes.Contains(data, []byte(wrong)) {
		t.Errorf("the API key is in the audit log")
	}
	if v, _ := verifyLog(t, nil, log); v.code != 0 {
		t.Errorf("verify: %d %q", v.code, v.stdout)
	}
}

// TestRunSIGINT: SIGINT, SIGHUP (the terminal closed) or SIGTERM while a
// command runs in the sandbox: exit 128+signal (130, 129, 143), the
// container is gone, session_end says interrupted and the log verifies.
// On the code before, SIGHUP killed agentbox with no session_end and
// SIGTERM exited 130.
func TestRunSIGINT(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGHUP, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) { runSignalled(t, sig) })
	}
}

func runSignalled(t *testing.T, sig syscall.Signal) {
	cli := testutil.RequireDocker(t)
	key := newKey(t)
	srv := agenttest.New(t, agenttest.Tools(agenttest.Bash("touch started; sleep 300")), agenttest.Answer("unreachable"))
	ws := t.TempDir()
	log := filepath.Join(t.TempDir(), "audit.jsonl")
	cmd := exec.Command(testutil.Binary(t), "run", "--no-memory", "--workspace", ws, "--audit", log, "sleep a while")
	cmd.Env = append(baseEnv(t), modelEnv(srv, key)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	pid := cmd.Process.Pid
	testutil.Eventually(t, 90*time.Second, "the command to start in the sandbox", func() bool {
		return inSandbox(cmd.Env, ws, "started")
	})
	if ownerOf(t, cli, pid) == "" {
		t.Fatalf("no container owned by pid %d", pid)
	}
	_ = cmd.Process.Signal(sig)
	err := cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 128+int(sig) {
		t.Fatalf("%v: want exit %d, got %v (%s)", sig, 128+int(sig), err, errb.String())
	}
	if left := ownerOf(t, cli, pid); left != "" {
		t.Errorf("container %s left behind", left)
	}
	if !strings.Contains(errb.String(), "interrupted") {
		t.Errorf("stderr does not say interrupted: %q", errb.String())
	}
	if !strings.Contains(errb.String(), "[1/30] execute_bash") {
		t.Errorf("the cut call is not printed: %q", errb.String())
	}
	for _, l := range strings.Split(errb.String(), "\n") {
		if strings.HasPrefix(l, "[1/30] execute_bash") && (!strings.Contains(l, "interrupted") || strings.Contains(l, "exit 0")) {
			t.Errorf("the cut call prints as %q, want interrupted", l)
		}
	}
	lines := readAuditLog(t, log)
	end := lines[len(lines)-1].rec
	if end.Event != "session_end" || end.Status != "interrupted" {
		t.Errorf("last record: %+v", end)
	}
	if v, _ := verifyLog(t, nil, log); v.code != 0 || strings.Contains(v.stdout, "never ended") {
		t.Errorf("verify: %d %q", v.code, v.stdout)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("the model was called %d times after the interrupt", n)
	}
}

// TestRunKeyNeverLeaks: the API key is not in the terminal output, the audit
// log, or the container's environment (as the model saw it).
func TestRunKeyNeverLeaks(t *testing.T) {
	testutil.RequireDocker(t)
	key := newKey(t)
	srv := agenttest.New(t,
		agenttest.Tools(agenttest.Bash("env; echo marker-$((6*7))")),
		agenttest.Tools(agenttest.Bash("echo api_key=abc123")),
		agenttest.Answer("the key is "+key),
	)
	srv.Key = key
	log := filepath.Join(t.TempDir(), "audit.jsonl")
	r := agentbox(t, append(modelEnv(srv, key), "LANG=C.UTF-8"), "run", "--no-memory", "--json", "--workspace", t.TempDir(), "--audit", log, "show the environment")
	if r.code != 0 {
		t.Fatalf("run: %d %q %q", r.code, r.stdout, r.stderr)
	}
	if strings.Contains(r.stdout+r.stderr, key) {
		t.Errorf("the API key reached the terminal:\n%s\n%s", r.stdout, r.stderr)
	}
	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{key, strings.TrimPrefix(key, "sk-test-"), "abc123"} {
		if bytes.Contains(data, []byte(s)) {
			t.Errorf("%q is in the audit log", s)
		}
	}
	reqs := srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests", len(reqs))
	}
	msgs := reqs[1].Request.Messages
	envOut := msgs[len(msgs)-1]
	if envOut.Role != "tool" || !strings.Contains(envOut.Content, "marker-42") || !strings.Contains(envOut.Content, "PATH=") {
		t.Fatalf("the env output did not reach the model: %+v", envOut)
	}
	if !strings.Contains(envOut.Content, "LANG=C.UTF-8") {
		t.Errorf("policy env LANG was not passed to the sandbox: %q", envOut.Content)
	}
	for _, bad := range []string{key, "OPENAI_API_KEY", "OPENAI_BASE_URL", "DOCKER_HOST", "XDG_STATE_HOME"} {
		if strings.Contains(envOut.Content, bad) {
			t.Errorf("%q is in the container's environment: %q", bad, envOut.Content)
		}
	}
	// No request body carries the key (only the Authorization header does).
	for i, rq := range reqs {
		if bytes.Contains(rq.Body, []byte(key)) {
			t.Errorf("request %d body contains the key", i+1)
		}
	}
}

// TestRunDemoScript is `make demo`: the scripted model on a copy of the
// demo workspace.
func TestRunDemoScript(t *testing.T) {
	cli := testutil.RequireDocker(t)
	root := testutil.RepoRoot()
	ws := filepath.Join(t.TempDir(), "workspace")
	if err := os.CopyFS(ws, os.DirFS(filepath.Join(root, "examples", "demo-workspace"))); err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(t.TempDir(), "audit.jsonl")
	r := agentbox(t, nil, "run", "--no-memory", "--workspace", ws, "--audit", log, "--script", filepath.Join(root, "examples", "demo.yaml"),
		"count the Python files here and write the number to count.txt")
	if r.code != 0 {
		t.Fatalf("demo: %d %q %q", r.code, r.stdout, r.stderr)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "count.txt")); err != nil || string(b) != "3\n" {
		t.Errorf("count.txt: %q %v", b, err)
	}
	if left := ownerOf(t, cli, r.pid); left != "" {
		t.Errorf("container %s left behind", left)
	}
	v, _ := verifyLog(t, nil, log)
	if v.code != 0 || !strings.Contains(v.stdout, "1 session") {
		t.Errorf("verify: %d %q", v.code, v.stdout)
	}
	lines := readAuditLog(t, log)
	var out string
	for _, l := range lines {
		if l.rec.Event == "tool_call" && l.rec.Phase == "result" && l.rec.Tool == "execute_bash" {
			out = l.rec.OutputPreview
		}
	}
	if strings.TrimSpace(out) != "3" {
		t.Errorf("find | wc -l output recorded as %q", out)
	}
	if r := agentbox(t, nil, "audit", "show", log); r.code != 0 || !strings.Contains(r.stdout, "count.txt") {
		t.Errorf("audit show: %d %q", r.code, r.stdout)
	}
}

// TestMakeDemo runs README's first command, `make demo`, as a user would
// (with its own binary, so the one under test is not rebuilt under the
// other tests): the scripted session completes in a real container and
// its audit log verifies.
func TestMakeDemo(t *testing.T) {
	testutil.RequireDocker(t)
	if _, err := exec.LookPath("make"); err != nil {
		t.Fatalf("make is needed for README's demo: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "agentbox")
	cmd := exec.Command("make", "demo", "BIN="+bin, "DEMO_DIR="+filepath.Join(t.TempDir(), "demo"))
	cmd.Dir = testutil.RepoRoot()
	cmd.Env = append(baseEnv(t), "GOFLAGS="+os.Getenv("GOFLAGS"), "GOCACHE="+goEnv(t, "GOCACHE"), "GOPATH="+goEnv(t, "GOPATH"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make demo: %v\n%s", err, out)
	}
	for _, want := range []string{"count.txt in the workspace: 3", "There are 3 Python files", "chain intact"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("make demo output lacks %q:\n%s", want, out)
		}
	}
}

func goEnv(t *testing.T, name string) string {
	out, err := exec.Command("go", "env", name).Output()
	if err != nil {
		t.Fatalf("go env %s: %v", name, err)
	}
	return strings.TrimSpace(string(out))
}
