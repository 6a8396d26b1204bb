package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/internal/textutil"
	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/sandbox"
	openai "github.com/sashabaranov/go-openai"
)

// Defaults of Tools.
const (
	DefaultCallTimeout = sandbox.DefaultCallTimeout
	DefaultOutputCap   = sandbox.DefaultOutputCap
)

// AuditLog is where tool calls are recorded; *audit.Writer implements it.
// Append must make the record durable (fsync) before it returns.
type AuditLog interface {
	Append(rec *audit.Record) error
}

// Decider is the policy; *policy.Policy implements it.
type Decider interface {
	Decide(a policy.Action) policy.Decision
	FileRules(write bool) (allow, deny []string)
}

var (
	_ AuditLog = (*audit.Writer)(nil)
	_ Decider  = (*policy.Policy)(nil)
)

// Tools carries out the model's tool calls: parse the arguments, ask the
// policy (and the approver when it says ask), record the decision in the
// audit log (durably, before anything runs), run the call in the sandbox,
// record the result, and return the text for the model. The same pipeline
// serves `agentbox run` (many calls) and `agentbox exec` (one
// execute_bash call). Calls must not overlap.
type Tools struct {
	Policy    Decider
	Session   sandbox.Session
	Audit     AuditLog
	Approver  Approver // nil = DenyAll (nobody can be asked)
	SessionID string   // "" = Session.ID()
	// CallTimeout bounds each execute_bash call (default 120s);
	// CallTimeoutMax bounds the timeout a call may ask for (its "timeout"
	// argument; default 10m, never below CallTimeout).
	CallTimeout, CallTimeoutMax time.Duration
	// OutputCap bounds the text of each result handed to the model
	// (default 16 KiB); longer text keeps its head and tail.
	OutputCap int
	// Network and WorkspaceMode are described to the model.
	Network       sandbox.NetworkMode
	WorkspaceMode sandbox.WorkspaceMode
	// Redact removes secrets from text that leaves agentbox (model
	// messages, terminal); nil = none.
	Redact func(string) string
	// Stdout and Stderr, when set, receive each execute_bash command's
	// output as it is written, the streams apart, whole and redacted
	// (`agentbox exec`); the model still gets the capped output.
	Stdout, Stderr io.Writer
	// Hook, when set, is the host-side step after each call (the
	// session's: see CallHook).
	Hook CallHook

	// Learn makes this a learning run (`run --learn`): calls the policy
	// asks about or denies run, recorded as would_ask/would_deny with the
	// rule; exec-time asks are allowed and recorded likewise. The
	// sandbox's own checks (file rules re-checked on the resolved path,
	// exec-time denials, kernel masks, container hardening) still apply.
	Learn bool

	// Calls learns the call running (the proxy binds credentialed
	// requests to it); nil: nobody.
	Calls CallTracker

	current string // the call in progress, for exec-time approvals
	// approved are the ask rules the call in progress was approved under
	// up front: a program of that call stopped at exec time under one of
	// them is not asked about a second time.
	approved map[string]bool
}

// Outcome is the result of one tool call.
type Outcome struct {
	CallID, Tool string
	Summary      string // the command, or the path; for display
	// Text is the tool message for the model (redacted, capped).
	Text string
	// Decision is "allow" or "deny" ("" when the call was invalid);
	// Policy is the policy's own verdict (allow, ask or deny) before any
	// approval.
	Decision  string
	Policy    string
	Rule      string
	Reason    string
	DecidedBy string
	Denied    bool // by the policy, the approver, or the executor's path check
	Invalid   bool // bad arguments or unknown tool: nothing was decided
	Ran       bool // the sandbox carried it out
	Failed    bool // it ran and failed: a file the executor could not read or write
	ExitCode  int  // execute_bash
	TimedOut  bool
	// Interrupted: the caller's context ended during the call; its
	// processes were killed, the sandbox kept.
	Interrupted bool
	Truncated   bool // the sandbox kept only the head and tail of the output
	OOMKilled   bool
	Duration    time.Duration
	OutBytes    int64
	OutSHA256   string
	Preview     string // start of the output, for the terminal (redacted)
	// Output is execute_bash's whole output as the sandbox returned it
	// (capped by the executor, not by OutputCap; redacted), for
	// `agentbox exec`.
	Output []byte
	// DeniedExecs are the programs execute_bash's command started that
	// the executor stopped at their exec; Alarms the forbidden effects
	// undone after it (redacted).
	DeniedExecs []sandbox.DeniedExec
	Alarms      []sandbox.Alarm
	// Failure says why a call that ran failed (a missing file, a
	// read-only workspace); "" when it did not fail.
	Failure string
	// Err is fatal (the executor died, the audit log failed, ctx ended):
	// the session must end. Text is still set for completeness.
	Err error
}

// Definitions returns the tool definitions for the model.
func (t *Tools) Definitions() []openai.Tool {
	return Definitions(t.toolInfo())
}

func (t *Tools) toolInfo() ToolInfo {
	return ToolInfo{CallTimeout: t.callTimeout(), CallTimeoutMax: t.callTimeoutMax(), OutputCap: t.outputCap(), Network: t.Network, WorkspaceMode: t.WorkspaceMode}
}

func (t *Tools) callTimeoutMax() time.Duration {
	m := t.CallTimeoutMax
	if m <= 0 {
		m = sandbox.DefaultCallTimeoutMax
	}
	return max(m, t.callTimeout())
}

func (t *Tools) callTimeout() time.Duration {
	if t.CallTimeout > 0 {
		return t.CallTimeout
	}
	return DefaultCallTimeout
}

func (t *Tools) outputCap() int {
	if t.OutputCap > 0 {
		return t.OutputCap
	}
	return DefaultOutputCap
}

func (t *Tools) sessionID() string {
	if t.SessionID != "" {
		return t.SessionID
	}
	return t.Session.ID()
}

func (t *Tools) redact(s string) string {
	if t.Redact == nil {
		return s
	}
	return t.Redact(s)
}

func (t *Tools) fileRules(write bool) *sandbox.FileRules {
	allow, deny := t.Policy.FileRules(write)
	return &sandbox.FileRules{Allow: allow, Deny: deny}
}

func (t *Tools) record(rec *audit.Record) error {
	rec.Session = t.sessionID()
	if err := t.Audit.Append(rec); err != nil {
		return fmt.Errorf("audit log: %w; nothing more runs without an audit record", err)
	}
	return nil
}

// Call carries out one tool call. Problems the model can fix (bad JSON,
// unknown tool, denial, a file the executor refused) come back as text in
// Outcome.Text; Outcome.Err is set only when the session must end. The
// Hook runs before it returns (on a staged workspace the call's changes
// are promoted, or held); a CallWaiter's BeforeCall runs first.
func (t *Tools) Call(ctx context.Context, callID, name, argsJSON string) Outcome {
	if w, ok := t.Hook.(CallWaiter); ok {
		if err := w.BeforeCall(ctx); err != nil {
			return Outcome{CallID: callID, Tool: name, Err: err, Text: "error: " + t.redact(err.Error())}
		}
	}
	o := t.call(ctx, callID, name, argsJSON)
	if t.Hook != nil && o.Err == nil {
		text := o.Text
		o.Err = t.Hook.AfterCall(ctx, &o)
		if o.Text != text {
			o = t.finish(o) // what the hook added is redacted and capped too
		}
	}
	return o
}

func (t *Tools) call(ctx context.Context, callID, name, argsJSON string) Outcome {
	o := Outcome{CallID: callID, Tool: name}
	t.current, t.approved = callID, nil
	spec, ok := lookupTool(name)
	if !ok {
		o.Invalid = true
		o.Summary = textutil.Clip(argsJSON, 200)
		o.Text = fmt.Sprintf("error: there is no tool named %q; the tools are %s.", name, strings.Join(ToolNames(), ", "))
		o.Err = t.record(&audit.Record{Event: audit.EventError, CallID: callID, Tool: name,
			Args: map[string]any{"arguments": argsJSON}, Error: "unknown tool " + name})
		return t.finish(o)
	}
	call, err := spec.parse([]byte(argsJSON))
	if err != nil {
		o.Invalid = true
		o.Summary = textutil.Clip(argsJSON, 200)
		o.Text = fmt.Sprintf("error: invalid arguments for %s: %v. Nothing ran. Call it again with a JSON object matching its schema.", name, err)
		o.Err = t.record(&audit.Record{Event: audit.EventError, CallID: callID, Tool: name,
			Args: map[string]any{"arguments": argsJSON}, Error: "invalid arguments: " + err.Error()})
		return t.finish(o)
	}
	o.Summary = call.summary

	// Decide.
	dec := t.Policy.Decide(call.action)
	verdict, by := dec.Verdict, audit.DecidedByPolicy
	o.Rule, o.Reason, o.Policy = dec.Rule, dec.Reason, dec.Verdict.String()
	denyNote := ""
	if would, ok := t.learnVerdict(dec); ok {
		o.Decision, o.DecidedBy = would, audit.DecidedByLearn
		if err := t.record(&audit.Record{Event: audit.EventToolCall, Phase: audit.PhaseDecision, CallID: callID, Tool: name,
			Args: call.args, Decision: would, Rule: dec.Rule, DecidedBy: audit.DecidedByLearn, Reason: dec.Reason}); err != nil {
			o.Err = err
			return t.finish(o)
		}
		return t.run(ctx, o, call, callID, name)
	}
	if verdict == policy.Ask {
		appr := t.Approver
		if appr == nil {
			appr = DenyAll{}
		}
		ap, err := appr.Approve(ctx, ApprovalRequest{CallID: callID, Tool: name, Subject: call.summary, Decision: dec})
		if err != nil {
			o.Err = fmt.Errorf("asking for approval of %s: %w", name, err)
			return t.finish(o)
		}
		verdict, by = policy.Deny, ap.DecidedBy
		if ap.Allow {
			verdict = policy.Allow
		}
		denyNote = ap.Note
		if ap.Allow {
			t.approved = map[string]bool{}
			for _, r := range askRules(dec) {
				t.approved[r] = true
			}
		}
		if err := t.record(&audit.Record{Event: audit.EventApproval, CallID: callID, Tool: name,
			Decision: verdict.String(), Rule: dec.Rule, DecidedBy: ap.DecidedBy, Approver: ap.Approver, Reason: ap.Note,
			Prompt: ap.Prompt, Scope: scopeOf(ap)}); err != nil {
			o.Err = err
			return t.finish(o)
		}
	}
	o.Decision, o.DecidedBy = verdict.String(), by
	if err := t.record(&audit.Record{Event: audit.EventToolCall, Phase: audit.PhaseDecision, CallID: callID, Tool: name,
		Args: call.args, Decision: verdict.String(), Rule: dec.Rule, DecidedBy: by, Reason: dec.Reason}); err != nil {
		o.Err = err
		return t.finish(o)
	}
	if verdict != policy.Allow {
		o.Denied = true
		o.Text = denialText(name, dec, verdict, denyNote)
		return t.finish(o)
	}
	return t.run(ctx, o, call, callID, name)
}

// run runs a call the pipeline let through and records its result.
func (t *Tools) run(ctx context.Context, o Outcome, call *toolCall, callID, name string) Outcome {
	start := time.Now()
	if t.Calls != nil {
		t.Calls.BeginCall(callID, call.action.Command)
	}
	res, err := call.run(ctx, t)
	if t.Calls != nil {
		t.Calls.EndCall()
	}
	o.Ran = true
	var fe *sandbox.FileError
	if errors.As(err, &fe) {
		rec := &audit.Record{Event: audit.EventToolCall, Phase: audit.PhaseResult, CallID: callID, Tool: name,
			Decision: "allow", Error: fe.Msg, DurationMS: audit.Ptr(time.Since(start).Milliseconds())}
		o.Text = fmt.Sprintf("error: %s failed: %s", name, fe.Msg)
		o.Failed = true
		o.Failure, o.Duration = fe.Msg, time.Since(start)
		if fe.Denied {
			o.Denied, o.Decision, o.Rule, o.Ran = true, "deny", fe.Rule, false
			rec.Decision, rec.Rule = "deny", fe.Rule
			rec.DecidedBy = audit.DecidedByPolicy
			o.Text = fmt.Sprintf("denied by policy: %s resolves to %s, which rule %s denies. Nothing was done. Do not try to reach it another way.", call.summary, fe.Resolved, fe.Rule)
		}
		o.Err = t.record(rec)
		return t.finish(o)
	}
	if err != nil {
		o.Err = fmt.Errorf("%s: %w", name, err)
		o.Text = "error: the sandbox failed; the session ends."
		_ = t.record(&audit.Record{Event: audit.EventError, CallID: callID, Tool: name, Error: err.Error()})
		return t.finish(o)
	}
	if res.exitCode != nil {
		o.ExitCode = *res.exitCode
	}
	o.Truncated = res.truncated
	o.TimedOut, o.OOMKilled, o.Duration, o.OutBytes, o.OutSHA256 = res.timedOut, res.oom, res.duration, res.outBytes, res.outSHA
	o.Interrupted = res.interrupted
	if res.output != nil {
		o.Output = []byte(t.redact(string(res.output)))
	}
	o.Text = res.text
	o.Preview = res.preview
	rec := &audit.Record{Event: audit.EventToolCall, Phase: audit.PhaseResult, CallID: callID, Tool: name,
		Decision: "allow", ExitCode: res.exitCode, DurationMS: audit.Ptr(res.duration.Milliseconds()),
		OutputBytes: audit.Ptr(res.outBytes), OutputSHA256: res.outSHA, OutputPreview: res.auditPrev,
		Truncated: audit.Ptr(res.truncated)}
	if x := res.exec; x != nil {
		o.DeniedExecs, o.Alarms = t.redactExecTime(x)
		rec.Programs, rec.ProgramsDropped = programs(x.Programs), x.ProgramsDropped
		if err := t.recordExecTime(callID, x); err != nil {
			o.Err = err
			return t.finish(o)
		}
	}
	if res.exitCode != nil {
		rec.TimedOut = audit.Ptr(res.timedOut)
	}
	if res.interrupted {
		rec.Error = interruptedNote
	}
	o.Err = t.record(rec)
	return t.finish(o)
}

// Exec carries out one execute_bash call of command (call id "exec"), as
// `agentbox exec` does: same pipeline, same audit records.
func (t *Tools) Exec(ctx context.Context, command string) Outcome {
	args, _ := json.Marshal(map[string]string{"command": command})
	return t.Call(ctx, "exec", ToolExecuteBash, string(args))
}

// textSlack is room above OutputCap for the lines agentbox adds around an
// output the executor already capped (exit code, truncation note).
const textSlack = 512

// finish redacts and caps what leaves the pipeline.
func (t *Tools) finish(o Outcome) Outcome {
	o.Text = capText(t.redact(o.Text), t.outputCap()+textSlack)
	o.Summary = t.redact(o.Summary)
	o.Reason = t.redact(o.Reason)
	o.Preview = t.redact(textutil.Clip(o.Preview, 2048))
	return o
}

func denialText(tool string, dec policy.Decision, v policy.Verdict, note string) string {
	var b strings.Builder
	if dec.Verdict == policy.Ask {
		fmt.Fprintf(&b, "denied: this %s call needs approval", tool)
		if dec.Rule != "" {
			fmt.Fprintf(&b, " (rule %s)", dec.Rule)
		}
		if note != "" {
			fmt.Fprintf(&b, " and %s", note)
		}
		b.WriteString(".")
	} else {
		fmt.Fprintf(&b, "denied by policy: %s", dec.Reason)
		if dec.Why != "" && !strings.Contains(dec.Reason, dec.Why) {
			fmt.Fprintf(&b, " (%s)", dec.Why)
		}
		b.WriteString(".")
	}
	b.WriteString(" Nothing ran. Do not retry the same call or work around the policy; use another approach, or explain in your final answer what you could not do.")
	return b.String()
}

// capText keeps text within n bytes: its head and tail around a marker.
func capText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	marker := fmt.Sprintf("\n[... %d bytes cut by agentbox ...]\n", len(s)-n)
	keep := n - len(marker)
	if keep < 64 {
		return textutil.Clip(s, n)
	}
	head := keep * 2 / 3
	tail := keep - head
	for head > 0 && (s[head]&0xC0) == 0x80 {
		head--
	}
	ts := len(s) - tail
	for ts < len(s) && (s[ts]&0xC0) == 0x80 {
		ts++
	}
	return s[:head] + marker + s[ts:]
}
