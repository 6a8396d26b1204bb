package batch

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentbox/agentbox/agent"
	"github.com/agentbox/agentbox/internal/textutil"
	"github.com/agentbox/agentbox/policy"
)

// A limit set in the task file is named by its field there; one from the
// command line by its flag; the session timeout of the policy by the
// policy.
func TestLimitHintsNameTheTaskFileField(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "ws", "f"), "x")
	yaml := filepath.Join(dir, "tasks.yaml")
	writeFile(t, yaml, "tasks:\n  - {id: a, task: t, workspace: ws}\n  - id: b\n    task: t\n    workspace: ws\n    max_steps: 4\n    timeout: 90s\n")
	jsonl := filepath.Join(dir, "tasks.jsonl")
	writeFile(t, jsonl, `{"id":"a","task":"t","workspace":"ws"}`+"\n"+`{"id":"b","task":"t","workspace":"ws","timeout":"5m"}`+"\n")
	def := policy.Default()
	ty, err := LoadTasks(yaml, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tj, err := LoadTasks(jsonl, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b := &batcher{}
	for _, c := range []struct {
		task           *Task
		flagTimeout    bool
		steps, timeout string
	}{
		{&ty[0], false, "raise --max-steps (or set tasks[0].max_steps in " + yaml + " (line 2))", "raise sandbox.timeouts.session in the policy (built-in), or set tasks[0].timeout in " + yaml + " (line 2)"},
		{&ty[0], true, "raise --max-steps", "raise --timeout (or set tasks[0].timeout in " + yaml + " (line 2))"},
		{&ty[1], true, "raise tasks[1].max_steps in " + yaml + " (line 3) or narrow the task", "raise tasks[1].timeout in " + yaml + " (line 3)"},
		{&tj[1], false, "raise --max-steps (or set max_steps on line 2 of " + jsonl + ")", "raise timeout on line 2 of " + jsonl},
	} {
		b.cfg.Timeout = 0
		if c.flagTimeout {
			b.cfg.Timeout = 1
		}
		h := b.limitHints(c.task, def)
		if !strings.HasPrefix(h.Steps, c.steps) || h.Timeout != c.timeout {
			t.Errorf("%s (%s):\n steps   %q\n timeout %q\nwant %q, %q", c.task.ID, c.task.File, h.Steps, h.Timeout, c.steps, c.timeout)
		}
	}
}

// The breaker trips after N endpoint failures in a row, or one rejected
// key; scripted tasks count for nothing; an answered task resets the run.
func TestBreaker(t *testing.T) {
	model := &Task{ID: "m"}
	scripted := &Task{ID: "s", Script: &agent.Script{}}
	down := fmt.Errorf("model call (step 1): %w", &agent.ModelError{Kind: agent.ErrModelUnavailable, Status: 500})
	id := func(s string) string { return s }
	b := newBreaker(3, id)
	for i, step := range []struct {
		task   *Task
		err    error
		tokens int
		trips  bool
	}{
		{model, down, 0, false}, {model, down, 0, false},
		{scripted, down, 0, false}, // not the endpoint's
		{model, nil, 10, false},    // answered: the run starts again
		{model, down, 0, false}, {model, down, 0, false}, {model, down, 0, true},
		{model, down, 0, false}, // tripped once
	} {
		msg := b.observe(step.task, step.err, step.tokens)
		if (msg != "") != step.trips {
			t.Fatalf("step %d: %q", i, msg)
		}
	}
	if r := b.tripped(); !strings.Contains(r, "HTTP 500") {
		t.Errorf("reason %q", r)
	}
	if !b.blocks(model) || b.blocks(scripted) {
		t.Error("a tripped breaker blocks the tasks that need the endpoint, and only those")
	}
	b = newBreaker(3, id)
	if msg := b.observe(model, &agent.ModelError{Kind: agent.ErrModelAuth, Status: 401}, 0); !strings.Contains(msg, "API key") {
		t.Errorf("a rejected key trips at once: %q", msg)
	}
}

// The progress line fits every width, by display columns, never cutting a
// character; the bar goes first when room is short.
func TestProgressLineFits(t *testing.T) {
	p := newProgress(nil, true, 12, 12)
	p.done, p.ok, p.failed = 5, 4, 1
	p.running = []*Task{{ID: "t05", Task: "résumé: 日本語のドキュメントを直す ✓ and a long tail of words\nsecond line"}}
	for cols := 1; cols <= 200; cols++ {
		l := p.line(cols)
		if w := textutil.Width(l); w > cols || !utf8.ValidString(l) || strings.ContainsAny(l, "\n\r\x1b\ufffd") {
			t.Fatalf("%d columns: %q (%d columns)", cols, l, w)
		}
	}
	if l := p.line(200); !strings.HasPrefix(l, "[") || !strings.Contains(l, "▸ t05: résumé: 日本語のドキュメントを直す ✓ and a long tail of words second line") {
		t.Errorf("wide: %q", l)
	}
	if l := p.line(40); strings.HasPrefix(l, "[") || !strings.HasPrefix(l, "5/12  ok 4  failed 1") {
		t.Errorf("narrow: %q", l)
	}
}
