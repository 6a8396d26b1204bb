package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/sandbox"
	openai "github.com/sashabaranov/go-openai"
)

// DefaultMaxSteps bounds the model calls of a run.
const DefaultMaxSteps = 30

// DefaultMaxCallsPerTurn bounds the tool calls run for one model turn; the
// rest are not run and the model is told so.
const DefaultMaxCallsPerTurn = 32

// Result statuses.
const (
	StatusOK          = "ok"          // the model gave a final answer
	StatusStepLimit   = "step_limit"  // MaxSteps model calls without a final answer
	StatusTimeout     = "timeout"     // the session timeout ended the run
	StatusInterrupted = "interrupted" // the caller's context was cancelled
	StatusError       = "error"       // the model, the sandbox or the audit log failed
)

// Errors that end a run; the CLI maps ErrStepLimit and ErrSessionTimeout to
// exit code 3. Other errors keep their cause: *ModelError (exit 1),
// sandbox.ErrExecutor (exit 125), context.Canceled (exit 130).
var (
	ErrStepLimit      = errors.New("step limit reached")
	ErrSessionTimeout = errors.New("session timeout")
)

// RunConfig is one agent run: the model loop. Tools carries the sandbox
// session, policy, approver and audit log; Run does not close the session
// and writes no session_start or session_end: the session package does
// (session.Run).
type RunConfig struct {
	Task  string
	Model Model
	// ModelName is recorded in the model_call records; "" = the model's
	// Name().
	ModelName string
	Tools     *Tools
	// Workspace is the host directory AGENTS.md is read from ("" = none).
	Workspace string

	MaxSteps int // default DefaultMaxSteps
	// MaxCallsPerTurn bounds the tool calls of one model turn (default
	// DefaultMaxCallsPerTurn).
	MaxCallsPerTurn int
	SessionTimeout  time.Duration // 0 = none
	ContextBudget   int           // estimated tokens; default DefaultContextBudget
	Plan            bool          // ask for a plan first, then run its steps
	// Memory holds past runs of this workspace, shown in the prompt; nil
	// disables it. (session.Run appends the run to it.)
	Memory      *Memory
	MemoryLines int  // default DefaultMemoryLines
	NoProject   bool // do not read AGENTS.md
	// Events receives progress (nil = none).
	Events Events
	// Start, when Tools.Session is nil, starts the sandbox (and records
	// session_start: session.Session.Start). Run starts it while the first
	// model request is in flight (unless Plan is set), so the run waits
	// for the slower of the two, not their sum; it sets Tools.Session,
	// which the caller closes. Tools.SessionID must be set.
	Start func(ctx context.Context) (sandbox.Session, error)
	Setup []string // run as tool calls before the first step (devcontainer lifecycle)
	// Hints say what to do when a limit stops the run (batch: the task
	// file's field); "" = raise --max-steps, sandbox.timeouts.session.
	Hints LimitHints
}

// Result is the outcome of a run (agentbox run --json prints it).
type Result struct {
	Status           string             `json:"status"`
	Answer           string             `json:"answer"`
	Steps            int                `json:"steps"`
	PromptTokens     int                `json:"prompt_tokens"`
	CompletionTokens int                `json:"completion_tokens"`
	SessionID        string             `json:"session"`
	FilesChanged     []audit.FileChange `json:"files_changed"`
	Plan             []string           `json:"plan,omitempty"`
	Error            string             `json:"error,omitempty"`
}

type runner struct {
	cfg    RunConfig
	tools  *Tools
	log    AuditLog
	ev     Events
	sid    string
	defs   []openai.Tool
	msgs   []Message
	meta   map[string]outputMeta
	step   int
	res    Result
	redact func(string) string

	first       chan modelReply // the first model request, sent before the sandbox ran
	firstTaken  bool
	firstStart  time.Time
	cancelFirst context.CancelFunc
}

// Run runs the model loop on cfg.Task until the model gives a final
// answer, a limit is reached, or ctx ends. It records the model calls and
// tool calls, not the session's start and end (session.Run brackets it).
// The Result is filled in whatever happens (FilesChanged is the session's
// to fill); the error says why the run did not end with "ok".
func Run(ctx context.Context, cfg RunConfig) (Result, error) {
	if cfg.Model == nil || cfg.Tools == nil || cfg.Tools.Policy == nil || cfg.Tools.Audit == nil ||
		(cfg.Tools.Session == nil && (cfg.Start == nil || cfg.Tools.SessionID == "")) {
		return Result{Status: StatusError}, errors.New("agent.Run: Model, Tools, Tools.Session (or Start and Tools.SessionID), Tools.Policy and Tools.Audit are required")
	}
	if strings.TrimSpace(cfg.Task) == "" {
		return Result{Status: StatusError}, errors.New("no task given: say what the agent should do, e.g. agentbox run \"count the Python files\"")
	}
	if cfg.MaxSteps <= 0 {
		cfg.MaxSteps = DefaultMaxSteps
	}
	if cfg.MaxCallsPerTurn <= 0 {
		cfg.MaxCallsPerTurn = DefaultMaxCallsPerTurn
	}
	if cfg.ContextBudget <= 0 {
		cfg.ContextBudget = DefaultContextBudget
	}
	if cfg.MemoryLines <= 0 {
		cfg.MemoryLines = DefaultMemoryLines
	}
	if cfg.ModelName == "" {
		if n, ok := cfg.Model.(interface{ Name() string }); ok {
			cfg.ModelName = n.Name()
		}
	}
	r := &runner{cfg: cfg, tools: cfg.Tools, log: cfg.Tools.Audit, ev: cfg.Events, meta: map[string]outputMeta{}}
	if r.ev == nil {
		r.ev = NopEvents{}
	}
	r.sid = r.tools.sessionID()
	r.res = Result{SessionID: r.sid, FilesChanged: []audit.FileChange{}}
	r.redact = r.tools.redact
	r.defs = r.tools.Definitions()
	return r.run(ctx)
}

func (r *runner) record(rec *audit.Record) error {
	rec.Session = r.sid
	if err := r.log.Append(rec); err != nil {
		return fmt.Errorf("audit log: %w; the run stops because it cannot be recorded", err)
	}
	return nil
}

func (r *runner) run(parent context.Context) (Result, error) {
	cfg := r.cfg
	if r.tools.Session == nil {
		defer r.dropFirst()
		if err := r.startSandbox(parent); err != nil {
			r.res.Status, r.res.Error = StatusError, err.Error()
			return r.res, err
		}
	}
	ctx := parent
	if cfg.SessionTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(parent, cfg.SessionTimeout, ErrSessionTimeout)
		defer cancel()
	}
	if r.msgs == nil {
		r.msgs = r.firstMessages()
	}
	answer, err := r.setupThenWork(ctx)

	// Classify the end.
	switch {
	case err == nil:
		r.res.Status = StatusOK
	case errors.Is(err, ErrStepLimit):
		r.res.Status = StatusStepLimit
	case parent.Err() != nil:
		r.res.Status = StatusInterrupted
		err = fmt.Errorf("interrupted after %d steps: %w", r.step, context.Cause(parent))
	case ctx.Err() != nil && errors.Is(context.Cause(ctx), ErrSessionTimeout):
		r.res.Status = StatusTimeout
		err = fmt.Errorf("%w: the run took longer than %s and was stopped; %s", ErrSessionTimeout, cfg.SessionTimeout, orDefault(cfg.Hints.Timeout, "raise sandbox.timeouts.session in the policy"))
	default:
		r.res.Status = StatusError
	}
	r.res.Answer = r.redact(answer)
	r.res.Steps = r.step
	if err != nil {
		r.res.Error = r.redact(err.Error())
	}
	return r.res, err
}

func (r *runner) promptInput() PromptInput {
	in := PromptInput{Info: r.tools.toolInfo()}
	if r.cfg.Workspace != "" && !r.cfg.NoProject {
		p, err := ReadProjectInstructions(r.cfg.Workspace)
		if err != nil {
			r.ev.Notice("ignoring " + ProjectFile + ": " + err.Error())
		}
		in.Project = p
	}
	if r.cfg.Memory != nil {
		m, err := r.cfg.Memory.Recent(r.cfg.MemoryLines)
		if err != nil {
			r.ev.Notice("ignoring the workspace memory: " + err.Error())
		}
		in.Memory = m
	}
	return in
}

// work runs the task, as one step or as a plan.
func (r *runner) work(ctx context.Context) (string, error) {
	task := r.redact(r.cfg.Task)
	if !r.cfg.Plan {
		if len(r.msgs) == 1 {
			r.msgs = append(r.msgs, Message{Role: RoleUser, Content: task})
		}
		return r.steps(ctx)
	}
	start := time.Now()
	steps, resp, ok, err := MakePlan(ctx, r.cfg.Model, task)
	if err != nil {
		return "", fmt.Errorf("planning: %w", err)
	}
	if err := r.modelCall(0, resp, time.Since(start)); err != nil {
		return "", err
	}
	r.ev.Planned(steps, ok)
	if !ok {
		r.msgs = append(r.msgs, Message{Role: RoleUser, Content: task})
		return r.steps(ctx)
	}
	r.res.Plan = steps
	var b strings.Builder
	fmt.Fprintf(&b, "Task: %s\n\nPlan:\n", task)
	for i, s := range steps {
		fmt.Fprintf(&b, "%d. %s\n", i+1, s)
	}
	b.WriteString("\nWork through the plan one step at a time; I will say which step to do.")
	r.msgs = append(r.msgs, Message{Role: RoleUser, Content: b.String()})
	var answer string
	for i, s := range steps {
		msg := fmt.Sprintf("Step %d of %d: %s\nWhen this step is done, reply with a short summary of it without calling a tool.", i+1, len(steps), s)
		if i == len(steps)-1 {
			msg = fmt.Sprintf("Step %d of %d (the last): %s\nWhen it is done, reply without calling a tool: that reply is the final answer to the task.", i+1, len(steps), s)
		}
		r.msgs = append(r.msgs, Message{Role: RoleUser, Content: msg})
		a, err := r.steps(ctx)
		if err != nil {
			return a, err
		}
		answer = a
		if i < len(steps)-1 {
			r.ev.StepDone(r.step, r.cfg.MaxSteps, i+1, len(steps), r.redact(a))
		}
	}
	return answer, nil
}

const nudge = "Your last reply was empty. Either call one of the tools, or reply with your final answer as text."

// steps asks the model and carries out its tool calls until it answers.
func (r *runner) steps(ctx context.Context) (string, error) {
	nudged := false
	var cut *string // the text of a reply cut off at the length limit
	for {
		if err := ctx.Err(); err != nil {
			return "", context.Cause(ctx)
		}
		if r.step >= r.cfg.MaxSteps {
			return "", fmt.Errorf("%w: %d model calls without a final answer; %s", ErrStepLimit, r.cfg.MaxSteps, orDefault(r.cfg.Hints.Steps, "raise --max-steps or narrow the task"))
		}
		r.step++
		if n := elide(r.msgs, r.cfg.ContextBudget, r.meta); n > 0 {
			r.ev.Notice(fmt.Sprintf("elided %d older tool outputs to stay within the context budget", n))
		}
		stepEvents(r.ev).ModelRequest(r.step, r.cfg.MaxSteps)
		start := time.Now()
		resp, err := r.complete(ctx, Request{Messages: r.msgs, Tools: r.defs, Step: r.step, OnDelta: r.onDelta(r.step)})
		if r.step == 1 && !r.firstStart.IsZero() {
			start = r.firstStart
		}
		if err != nil {
			if ctx.Err() == nil {
				_ = r.record(&audit.Record{Event: audit.EventError, Step: r.step, Error: r.redact(err.Error())})
				if rerr := r.refuseReply(err); rerr != nil {
					return "", rerr
				}
			}
			return "", fmt.Errorf("model call (step %d): %w", r.step, err)
		}
		if err := r.modelCall(r.step, resp, time.Since(start)); err != nil {
			return "", err
		}
		if retry, err := r.cutOff(resp, &cut); err != nil {
			_ = r.record(&audit.Record{Event: audit.EventError, Step: r.step, Error: r.redact(err.Error())})
			return "", err
		} else if retry {
			continue
		}
		msg := resp.Message
		msg.Role = RoleAssistant
		msg.ReasoningContent = "" // some endpoints reject it in the history
		if strings.TrimSpace(msg.Content) == "" && len(msg.ToolCalls) == 0 {
			if nudged {
				return "", fmt.Errorf("%w twice in a row (finish reason %q); try another model", ErrEmptyReply, resp.FinishReason)
			}
			nudged = true
			r.ev.Notice("the model gave an empty reply; asking it again")
			r.msgs = append(r.msgs, Message{Role: RoleUser, Content: nudge})
			continue
		}
		nudged = false
		if strings.TrimSpace(msg.Content) != "" {
			stepEvents(r.ev).ModelText(r.step, r.redact(msg.Content))
		}
		if len(msg.ToolCalls) == 0 {
			r.msgs = append(r.msgs, msg)
			if cut != nil {
				return *cut + msg.Content, nil // the continuation of a cut-off answer
			}
			return msg.Content, nil
		}
		cut = nil
		for i := range msg.ToolCalls {
			if msg.ToolCalls[i].ID == "" {
				msg.ToolCalls[i].ID = fmt.Sprintf("call_%d_%d", r.step, i+1)
			}
			msg.ToolCalls[i].Type = openai.ToolTypeFunction
		}
		r.msgs = append(r.msgs, msg)
		skipped, err := r.skipExtraCalls(msg.ToolCalls)
		if err != nil {
			return "", err
		}
		for _, tc := range msg.ToolCalls[:min(len(msg.ToolCalls), r.cfg.MaxCallsPerTurn)] {
			stepEvents(r.ev).ToolStarted(r.step, tc.Function.Name, tc.Function.Arguments)
			o := r.tools.Call(ctx, tc.ID, tc.Function.Name, tc.Function.Arguments)
			r.ev.ToolCall(r.step, r.cfg.MaxSteps, o)
			if o.Err != nil {
				return "", o.Err
			}
			r.msgs = append(r.msgs, Message{Role: RoleTool, ToolCallID: tc.ID, Content: o.Text})
			if o.Ran && o.OutSHA256 != "" {
				r.meta[tc.ID] = outputMeta{bytes: o.OutBytes, sha: o.OutSHA256}
			}
		}
		r.msgs = append(r.msgs, skipped...)
	}
}

// skipExtraCalls answers every tool call past the per-turn bound with a
// message that it did not run (the API wants an answer to each call id),
// and records the skip in the audit log.
func (r *runner) skipExtraCalls(calls []openai.ToolCall) ([]Message, error) {
	max := r.cfg.MaxCallsPerTurn
	if len(calls) <= max {
		return nil, nil
	}
	msg := fmt.Sprintf("not run: this turn asked for %d tool calls and at most %d run per turn; ask for the rest in your next turn", len(calls), max)
	if err := r.record(&audit.Record{Event: audit.EventError, Step: r.step,
		Error: fmt.Sprintf("the model asked for %d tool calls in one turn; ran the first %d, skipped %d", len(calls), max, len(calls)-max)}); err != nil {
		return nil, err
	}
	var out []Message
	for _, tc := range calls[max:] {
		if err := r.tools.Refuse(tc.ID, tc.Function.Name, tc.Function.Arguments, RuleCallsPerTurn, msg); err != nil {
			return nil, err
		}
		out = append(out, Message{Role: RoleTool, ToolCallID: tc.ID, Content: msg})
	}
	return out, nil
}

// modelCall records one completion and adds up its tokens.
func (r *runner) modelCall(step int, resp Response, d time.Duration) error {
	r.res.PromptTokens += resp.Usage.PromptTokens
	r.res.CompletionTokens += resp.Usage.CompletionTokens
	return r.record(&audit.Record{Event: audit.EventModelCall, Step: step, Model: r.cfg.ModelName,
		PromptTokens: resp.Usage.PromptTokens, CompletionTokens: resp.Usage.CompletionTokens,
		TotalTokens: resp.Usage.TotalTokens, DurationMS: audit.Ptr(d.Milliseconds()), FinishReason: resp.FinishReason,
		Text: resp.Message.Content, Plan: planOf(step, resp)})
}

// planOf is the plan a planning call (step 0) proposed, for the audit log.
func planOf(step int, resp Response) []string {
	if step != 0 {
		return nil
	}
	steps, _ := parsePlan(resp.Message.Content)
	return steps
}

// LimitHints are the "what to do" of the errors of a run stopped by a
// limit.
type LimitHints struct {
	Steps   string // the step limit
	Timeout string // the session timeout
}

func orDefault(s, def string) string {
	if s != "" {
		return s
	}
	return def
}
