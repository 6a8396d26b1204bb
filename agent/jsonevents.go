package agent

import (
	"encoding/json"
	"io"
	"sync"

	"github.com/agentbox/agentbox/audit"
)

// JSONEvents writes one JSON object per line for programs that drive
// agentbox (`agentbox run --json-events`): "step" (a model request
// starts), "model_text", "tool_started", "tool_call" (with the decision
// and the result), "plan", "step_done", "notice" and a last "end" that
// carries the Result. Every object has "event"; model and tool text went
// through Redact.
type JSONEvents struct {
	W      io.Writer
	Redact func(string) string // nil = none

	mu    sync.Mutex
	delta deltaStream
}

var (
	_ Events     = (*JSONEvents)(nil)
	_ StepEvents = (*JSONEvents)(nil)
)

type jsonEvent struct {
	Event     string   `json:"event"`
	Step      int      `json:"step,omitempty"`
	MaxSteps  int      `json:"max_steps,omitempty"`
	Text      string   `json:"text,omitempty"`
	Tool      string   `json:"tool,omitempty"`
	Summary   string   `json:"summary,omitempty"`
	Decision  string   `json:"decision,omitempty"`
	Rule      string   `json:"rule,omitempty"`
	Reason    string   `json:"reason,omitempty"`
	DecidedBy string   `json:"decided_by,omitempty"`
	Status    string   `json:"status,omitempty"`
	Ran       *bool    `json:"ran,omitempty"`
	ExitCode  *int     `json:"exit_code,omitempty"`
	TimedOut  bool     `json:"timed_out,omitempty"`
	Duration  *int64   `json:"duration_ms,omitempty"`
	Preview   string   `json:"output_preview,omitempty"`
	Error     string   `json:"error,omitempty"`
	Plan      []string `json:"plan,omitempty"`
	PlanStep  int      `json:"plan_step,omitempty"`
	Result    *Result  `json:"result,omitempty"`
	Reset     bool     `json:"reset,omitempty"`
}

func (j *JSONEvents) emit(e jsonEvent) {
	if j.Redact != nil {
		e.Text, e.Summary, e.Preview, e.Error = j.Redact(e.Text), j.Redact(e.Summary), j.Redact(e.Preview), j.Redact(e.Error)
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	enc := json.NewEncoder(j.W)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(e)
}

// ModelRequest emits "step".
func (j *JSONEvents) ModelRequest(step, maxSteps int) {
	j.emit(jsonEvent{Event: "step", Step: step, MaxSteps: maxSteps})
}

// ModelText emits "model_text".
func (j *JSONEvents) ModelText(step int, text string) {
	j.emit(jsonEvent{Event: "model_text", Step: step, Text: text})
}

// ToolStarted emits "tool_started".
func (j *JSONEvents) ToolStarted(step int, tool, _ string) {
	j.emit(jsonEvent{Event: "tool_started", Step: step, Tool: tool})
}

// Planned emits "plan".
func (j *JSONEvents) Planned(steps []string, ok bool) {
	if steps == nil {
		steps = []string{}
	}
	j.emit(jsonEvent{Event: "plan", Plan: steps})
}

// ToolCall emits "tool_call": the decision and, when it ran, the result.
func (j *JSONEvents) ToolCall(step, maxSteps int, o Outcome) {
	e := jsonEvent{Event: "tool_call", Step: step, MaxSteps: maxSteps, Tool: o.Tool, Summary: o.Summary,
		Decision: o.Decision, Rule: o.Rule, Reason: o.Reason, DecidedBy: o.DecidedBy, Status: callStatus(o), Ran: &o.Ran}
	if o.Invalid {
		e.Decision = "invalid"
	}
	if o.Ran {
		ms := o.Duration.Milliseconds()
		e.Duration, e.TimedOut, e.Preview = &ms, o.TimedOut, o.Preview
		if o.Tool == "execute_bash" {
			e.ExitCode = &o.ExitCode
		}
	}
	if o.Err != nil {
		e.Error = o.Err.Error()
	} else if failed, why := callFailed(o); failed {
		e.Error = why
	}
	j.emit(e)
}

// StepDone emits "step_done".
func (j *JSONEvents) StepDone(step, maxSteps, planStep, planSteps int, summary string) {
	j.emit(jsonEvent{Event: "step_done", Step: step, MaxSteps: maxSteps, PlanStep: planStep, Text: summary})
}

// Notice emits "notice".
func (j *JSONEvents) Notice(msg string) { j.emit(jsonEvent{Event: "notice", Text: msg}) }

// Finished emits "end" with the result.
func (j *JSONEvents) Finished(step, maxSteps int, r Result) {
	j.ModelDelta(0, Delta{End: true})
	if r.FilesChanged == nil {
		r.FilesChanged = []audit.FileChange{}
	}
	j.emit(jsonEvent{Event: "end", Step: step, MaxSteps: maxSteps, Status: r.Status, Result: &r})
}
