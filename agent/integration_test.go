package agent_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/agent"
	"github.com/agentbox/agentbox/agent/agenttest"
	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/internal/testutil"
	"github.com/agentbox/agentbox/sandbox"
)

// These tests drive the real go-openai client against an httptest server
// speaking chat completions, and carry out the tool calls in a real Docker
// sandbox (skipped without Docker unless AGENTBOX_REQUIRE_DOCKER=1).

type dockerRun struct {
	ws        string
	srv       *agenttest.Server
	sess      sandbox.Session
	auditPath string
	out       bytes.Buffer
	res       agent.Result
	err       error
}

func demoWorkspace(t testing.TB) string {
	ws := t.TempDir()
	for _, p := range []string{"app/a.py", "app/b.py", "tests/test_a.py", "README.md"} {
		os.MkdirAll(filepath.Dir(filepath.Join(ws, p)), 0o755)
		if err := os.WriteFile(filepath.Join(ws, p), []byte("# "+p+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return ws
}

// runDocker runs one task in a real sandbox on ws with the scripted replies.
func runDocker(t *testing.T, ws string, setup func(*dockerRun, *agent.RunConfig), replies ...agenttest.Reply) *dockerRun {
	t.Helper()
	d := &dockerRun{ws: ws, srv: agenttest.New(t, replies...)}
	d.srv.Key = testKey
	d.sess = testutil.StartSession(t, ws)
	w, path := openAudit(t)
	d.auditPath = path
	m, err := agent.NewOpenAI(agent.Config{APIKey: testKey, BaseURL: d.srv.URL(), Model: "test-model",
		Retry: agent.RetryPolicy{BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	redact := audit.Redactor(audit.Options{Secrets: []string{testKey}})
	tools := &agent.Tools{Policy: testPolicyT(t), Session: d.sess, Audit: w, CallTimeout: 20 * time.Second, Network: "none", WorkspaceMode: "rw", Redact: redact}
	cfg := agent.RunConfig{Task: "count the Python files and write the count to count.txt", Model: m, Tools: tools,
		Workspace: ws,
		Events:    &agent.Printer{W: &d.out, Redact: redact}}
	if setup != nil {
		setup(d, &cfg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	d.res, d.err = run(ctx, cfg)
	t.Logf("output:\n%s", d.out.String())
	return d
}

func (d *dockerRun) toolMessages(req int) []agent.Message {
	var out []agent.Message
	for _, m := range d.srv.Requests()[req].Request.Messages {
		if m.Role == agent.RoleTool {
			out = append(out, m)
		}
	}
	return out
}

func TestDockerMultiStepTask(t *testing.T) {
	ws := demoWorkspace(t)
	d := runDocker(t, ws, nil,
		agenttest.Tools(agenttest.Bash("find . -name '*.py' | wc -l")),
		agenttest.Tools(agenttest.Write("count.txt", "3\n")),
		agenttest.Tools(agenttest.Read("count.txt")),
		agenttest.Answer("There are 3 Python files; the count is in count.txt."),
	)
	if d.err != nil || d.res.Status != agent.StatusOK || d.res.Steps != 4 {
		t.Fatalf("res %+v err %v", d.res, d.err)
	}
	b, err := os.ReadFile(filepath.Join(ws, "count.txt"))
	if err != nil || string(b) != "3\n" {
		t.Fatalf("count.txt on the host = %q, %v", b, err)
	}
	if tm := d.toolMessages(1); len(tm) != 1 || tm[0].Content != "exit code: 0\n3\n" {
		t.Errorf("tool message = %+v", tm)
	}
	if tm := d.toolMessages(3); !strings.Contains(tm[2].Content, "count.txt (2 bytes):\n3\n") {
		t.Errorf("read_file message = %q", tm[2].Content)
	}
	if len(d.res.FilesChanged) != 1 || d.res.FilesChanged[0].Path != "count.txt" || d.res.FilesChanged[0].Change != "added" {
		t.Errorf("files changed = %+v", d.res.FilesChanged)
	}
	if d.res.PromptTokens == 0 || d.res.CompletionTokens != 40 {
		t.Errorf("tokens = %d/%d", d.res.PromptTokens, d.res.CompletionTokens)
	}
	recs := readAudit(t, d.auditPath)
	if recs[0].Event != audit.EventSessionStart || recs[0].ContainerID != d.sess.Info().ContainerID || recs[0].ImageID == "" || recs[0].Model != "test-model" {
		t.Errorf("session_start = %+v", recs[0])
	}
	if mc := events(recs, audit.EventModelCall); len(mc) != 4 || mc[0].TotalTokens == 0 || mc[0].FinishReason != "tool_calls" || mc[0].DurationMS == nil {
		t.Errorf("model_call records = %+v", mc)
	}
	if !strings.Contains(d.out.String(), "[1/30] execute_bash  find . -name '*.py' | wc -l") || !strings.Contains(d.out.String(), "[4/30] done: There are 3") {
		t.Errorf("printer output:\n%s", d.out.String())
	}
}

func TestDockerParallelCallsMalformedAndUnknown(t *testing.T) {
	ws := demoWorkspace(t)
	d := runDocker(t, ws, nil,
		agenttest.Tools(
			agenttest.Bash("echo one"),
			agenttest.Call{Name: "execute_bash", Args: `{"command": "echo two`},
			agenttest.Call{Name: "delete_everything", Args: `{}`},
			agenttest.Call{Name: "execute_bash", Args: `["echo"]`},
			agenttest.Write("two.txt", "2"),
			agenttest.Bash("cat two.txt"),
		),
		agenttest.Answer("done"),
	)
	if d.err != nil || d.res.Status != agent.StatusOK {
		t.Fatalf("res %+v err %v", d.res, d.err)
	}
	tm := d.toolMessages(1)
	if len(tm) != 6 {
		t.Fatalf("%d tool messages, want 6", len(tm))
	}
	wants := []string{"exit code: 0\none\n", "invalid arguments", "no tool named", "must be a JSON object", "wrote 1 bytes to two.txt", "exit code: 0\n2\n"}
	for i, w := range wants {
		if !strings.Contains(tm[i].Content, w) {
			t.Errorf("tool message %d = %q, want %q", i, tm[i].Content, w)
		}
	}
}

func TestDockerDeniedThenWorkaround(t *testing.T) {
	ws := demoWorkspace(t)
	d := runDocker(t, ws, nil,
		agenttest.Tools(agenttest.Bash("curl -s http://example.com/data.txt > data.txt")),
		agenttest.Tools(agenttest.Bash("printf 'local data\\n' > data.txt && cat data.txt")),
		agenttest.Answer("Downloads are not allowed; I created data.txt locally."),
	)
	if d.err != nil || d.res.Status != agent.StatusOK {
		t.Fatalf("res %+v err %v", d.res, d.err)
	}
	if tm := d.toolMessages(1); !strings.Contains(tm[0].Content, "denied by policy") || !strings.Contains(tm[0].Content, "no downloads") {
		t.Errorf("denial = %q", tm[0].Content)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "data.txt")); string(b) != "local data\n" {
		t.Errorf("data.txt = %q", b)
	}
	if !strings.Contains(d.out.String(), "deny commands.deny[1]") {
		t.Errorf("printer:\n%s", d.out.String())
	}
}

func TestDockerAskWithoutTTYIsDenied(t *testing.T) {
	ws := demoWorkspace(t)
	d := runDocker(t, ws, func(_ *dockerRun, c *agent.RunConfig) { c.Tools.Approver = agent.DenyAll{} },
		agenttest.Tools(agenttest.Bash("git push origin main")),
		agenttest.Answer("I could not push: it needs approval."),
	)
	if d.err != nil {
		t.Fatal(d.err)
	}
	if tm := d.toolMessages(1); !strings.Contains(tm[0].Content, "needs approval") {
		t.Errorf("tool message = %q", tm[0].Content)
	}
	ap := events(readAudit(t, d.auditPath), audit.EventApproval)
	if len(ap) != 1 || ap[0].Decision != "deny" || ap[0].DecidedBy != audit.DecidedByNoTerminal {
		t.Errorf("approval = %+v", ap)
	}
}

func TestDockerStepLimit(t *testing.T) {
	ws := demoWorkspace(t)
	var replies []agenttest.Reply
	for range 4 {
		replies = append(replies, agenttest.Tools(agenttest.Bash("true")))
	}
	d := runDocker(t, ws, func(_ *dockerRun, c *agent.RunConfig) { c.MaxSteps = 3 }, replies...)
	if !errors.Is(d.err, agent.ErrStepLimit) || d.res.Status != agent.StatusStepLimit || d.res.Steps != 3 {
		t.Fatalf("res %+v err %v", d.res, d.err)
	}
	if !strings.Contains(d.out.String(), "[3/3] stopped (step_limit)") {
		t.Errorf("printer:\n%s", d.out.String())
	}
}

func TestDockerModelFailures(t *testing.T) {
	t.Run("429 then success", func(t *testing.T) {
		d := runDocker(t, demoWorkspace(t), nil,
			agenttest.Reply{Status: 429, RetryAfter: "0"},
			agenttest.Tools(agenttest.Bash("true")),
			agenttest.Reply{Status: 429},
			agenttest.Answer("ok"),
		)
		if d.err != nil || d.res.Answer != "ok" || d.srv.Served() != 4 {
			t.Fatalf("res %+v err %v", d.res, d.err)
		}
	})
	t.Run("500 until retries run out", func(t *testing.T) {
		var replies []agenttest.Reply
		for range agent.DefaultMaxAttempts {
			replies = append(replies, agenttest.Reply{Status: 502, Error: "bad gateway"})
		}
		d := runDocker(t, demoWorkspace(t), nil, replies...)
		if !errors.Is(d.err, agent.ErrModelUnavailable) || d.res.Status != agent.StatusError {
			t.Fatalf("res %+v err %v", d.res, d.err)
		}
		recs := readAudit(t, d.auditPath)
		if e := events(recs, audit.EventError); len(e) != 1 || !strings.Contains(e[0].Error, "502") {
			t.Errorf("error records = %+v", e)
		}
		if end := recs[len(recs)-1]; end.Event != audit.EventSessionEnd || end.Status != "error" {
			t.Errorf("session_end = %+v", end)
		}
	})
	t.Run("401", func(t *testing.T) {
		d := runDocker(t, demoWorkspace(t), func(d *dockerRun, c *agent.RunConfig) {
			m, _ := agent.NewOpenAI(agent.Config{APIKey: "sk-wrong-key-123", BaseURL: d.srv.URL()})
			c.Model = m
		}, agenttest.Answer("never"))
		if !errors.Is(d.err, agent.ErrModelAuth) || d.srv.Served() != 0 || len(d.srv.Requests()) != 1 {
			t.Fatalf("err %v served %d requests %d", d.err, d.srv.Served(), len(d.srv.Requests()))
		}
		if !strings.Contains(d.err.Error(), "OPENAI_API_KEY") {
			t.Errorf("message = %v", d.err)
		}
	})
	t.Run("empty reply", func(t *testing.T) {
		d := runDocker(t, demoWorkspace(t), nil, agenttest.Reply{}, agenttest.Answer("ok"))
		if d.err != nil || d.res.Answer != "ok" {
			t.Fatalf("res %+v err %v", d.res, d.err)
		}
		d = runDocker(t, demoWorkspace(t), nil, agenttest.Reply{}, agenttest.Reply{}, agenttest.Answer("never"))
		if !errors.Is(d.err, agent.ErrEmptyReply) {
			t.Fatalf("err %v", d.err)
		}
	})
}

func TestDockerContextElision(t *testing.T) {
	var replies []agenttest.Reply
	for i := range 5 {
		replies = append(replies, agenttest.Tools(agenttest.Bash("seq 1 3000 | head -c 12000; echo; echo call"+string(rune('0'+i)))))
	}
	replies = append(replies, agenttest.Answer("done"))
	d := runDocker(t, demoWorkspace(t), func(_ *dockerRun, c *agent.RunConfig) { c.ContextBudget = 8000 }, replies...)
	if d.err != nil {
		t.Fatal(d.err)
	}
	tm := d.toolMessages(5)
	if len(tm) != 5 {
		t.Fatalf("%d tool messages", len(tm))
	}
	if !strings.HasPrefix(tm[0].Content, "[output elided by agentbox to save context; ") {
		t.Errorf("oldest not elided: %.100q", tm[0].Content)
	}
	// The note names the sha256 of the full output, as recorded in the log.
	var sha string
	for _, r := range events(readAudit(t, d.auditPath), audit.EventToolCall) {
		if r.Phase == audit.PhaseResult {
			sha = r.OutputSHA256
			break
		}
	}
	if sha == "" || !strings.Contains(tm[0].Content, "sha256 "+sha) {
		t.Errorf("note %q lacks audit sha %s", tm[0].Content, sha)
	}
	if !strings.HasSuffix(tm[4].Content, "call4\n") || strings.Contains(tm[4].Content, "elided") {
		t.Errorf("latest output not whole: %.100q", tm[4].Content)
	}
}

func TestDockerAPIKeyAppearsNowhere(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", testKey)
	ws := demoWorkspace(t)
	os.WriteFile(filepath.Join(ws, "AGENTS.md"), []byte("the key is "+testKey+"\n"), 0o644)
	d := runDocker(t, ws, func(_ *dockerRun, c *agent.RunConfig) { c.Task = "print env; key " + testKey },
		agenttest.Tools(agenttest.Bash("env; echo $OPENAI_API_KEY; cat AGENTS.md")),
		agenttest.Answer("the key was "+testKey),
	)
	if d.err != nil {
		t.Fatal(d.err)
	}
	tm := d.toolMessages(1)
	if strings.Contains(tm[0].Content, "sk-test") && !strings.Contains(tm[0].Content, audit.Redacted) {
		t.Errorf("env output = %q", tm[0].Content)
	}
	// The sandbox env itself (not redacted by anyone) lacks the key.
	res, err := d.sess.Exec(context.Background(), sandbox.ExecRequest{Command: "env", Timeout: 10 * time.Second})
	if err != nil || bytes.Contains(res.Output, []byte(testKey)) || bytes.Contains(res.Output, []byte("OPENAI")) {
		t.Errorf("container env: %s %v", res.Output, err)
	}
	for i, r := range d.srv.Requests() {
		if bytes.Contains(r.Body, []byte(testKey)) {
			t.Errorf("request %d body contains the key", i)
		}
	}
	if data, _ := os.ReadFile(d.auditPath); bytes.Contains(data, []byte(testKey)) {
		t.Error("audit log contains the key")
	}
	if strings.Contains(d.out.String(), testKey) || strings.Contains(d.res.Answer, testKey) || strings.Contains(d.res.Error, testKey) {
		t.Errorf("terminal or result contains the key:\n%s", d.out.String())
	}
}

// TestDockerDemoScript replays examples/demo.yaml on a copy of
// examples/demo-workspace, as `agentbox run --script` does.
func TestDockerDemoScript(t *testing.T) {
	ws := t.TempDir()
	if err := os.CopyFS(ws, os.DirFS("../examples/demo-workspace")); err != nil {
		t.Fatal(err)
	}
	s, err := agent.LoadScript("../examples/demo.yaml")
	if err != nil {
		t.Fatal(err)
	}
	sess := testutil.StartSession(t, ws)
	w, path := openAudit(t)
	var out bytes.Buffer
	res, err := run(context.Background(), agent.RunConfig{
		Task: "count the Python files and write the count to count.txt", Model: agent.NewScripted("demo.yaml", s),
		Tools:     &agent.Tools{Policy: testPolicyT(t), Session: sess, Audit: w},
		Workspace: ws, Events: &agent.Printer{W: &out},
	})
	t.Logf("output:\n%s", out.String())
	if err != nil || res.Status != agent.StatusOK {
		t.Fatalf("res %+v err %v", res, err)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "count.txt")); string(b) != "3\n" {
		t.Errorf("count.txt = %q", b)
	}
	if !strings.Contains(out.String(), "       3\n") {
		t.Errorf("the demo workspace should hold 3 Python files:\n%s", out.String())
	}
	if recs := readAudit(t, path); recs[len(recs)-1].Files[0].Path != "count.txt" {
		t.Errorf("session_end files = %+v", recs[len(recs)-1].Files)
	}
}

func TestDockerTruncationAndCallTimeout(t *testing.T) {
	d := runDocker(t, demoWorkspace(t), func(_ *dockerRun, c *agent.RunConfig) { c.Tools.CallTimeout = 8 * time.Second },
		// 8 s: the first call must finish in time even on a loaded machine.
		agenttest.Tools(agenttest.Bash("yes abcdefgh | head -c 100000"), agenttest.Bash("echo started; sleep 300")),
		agenttest.Answer("done"),
	)
	if d.err != nil {
		t.Fatal(d.err)
	}
	tm := d.toolMessages(1)
	if !strings.Contains(tm[0].Content, "[output truncated by the sandbox: 100000 bytes in total") || len(tm[0].Content) > 16<<10+512 {
		t.Errorf("truncated output: %d bytes, tail %q", len(tm[0].Content), tm[0].Content[max(0, len(tm[0].Content)-200):])
	}
	if !strings.HasPrefix(tm[1].Content, "timed out after 8s") || !strings.Contains(tm[1].Content, "started") {
		t.Errorf("timed-out call: %q", tm[1].Content)
	}
	if !strings.Contains(d.out.String(), "timed out") {
		t.Errorf("printer:\n%s", d.out.String())
	}
}
