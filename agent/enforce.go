package agent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentbox/agentbox/internal/textutil"

	"github.com/agentbox/agentbox"
	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/sandbox"
	"mvdan.cc/sh/v3/syntax"
)

// maxPolicySource bounds the policy file read again for the executor (the
// policy package refuses larger ones).
const maxPolicySource = 1 << 20

// PolicySource returns the bytes the policy p was parsed from: the
// built-in default, or the file read again and checked against the sha256
// recorded when it was loaded, so that the executor judges exactly the
// policy the audit log names. A file changed since is an error.
func PolicySource(p *policy.Policy) ([]byte, error) {
	src := agentbox.DefaultPolicy
	if p.Path != "" {
		f, err := os.Open(p.Path)
		if err != nil {
			return nil, fmt.Errorf("%w: reading the policy again for the executor: %w", sandbox.ErrConfig, err)
		}
		defer f.Close()
		if src, err = io.ReadAll(io.LimitReader(f, maxPolicySource+1)); err != nil {
			return nil, fmt.Errorf("%w: reading the policy again for the executor: %w", sandbox.ErrConfig, err)
		}
	}
	sum := sha256.Sum256(src)
	if got := hex.EncodeToString(sum[:]); got != p.SHA256 {
		return nil, fmt.Errorf("%w: the policy %s changed since it was loaded (sha256 %s, now %s); run again", sandbox.ErrConfig, p.Describe(), p.SHA256, got)
	}
	return src, nil
}

// Enforcement is what the executor enforces on its own for p: the command
// rules at every exec (asks go to approve; nil denies them) and the
// effects check of the write rules. The dead man's switch keeps the
// backend's default.
func Enforcement(p *policy.Policy, approve func(context.Context, sandbox.ExecAsk) bool) (sandbox.Enforcement, error) {
	src, err := PolicySource(p)
	if err != nil {
		return sandbox.Enforcement{}, err
	}
	name := "policy.example.yaml (built-in)"
	if p.Path != "" {
		name = filepath.Base(p.Path)
	}
	allow, deny := p.FileRules(true)
	return sandbox.Enforcement{Policy: src, PolicyName: name, Approve: approve,
		WriteRules: &sandbox.FileRules{Allow: allow, Deny: deny}}, nil
}

// execApprover is the answer to exec-time asks: a program under a rule
// the call was approved under up front runs; otherwise the session's
// approver is asked (nobody to ask denies), each answer recorded.
func (t *Tools) execApprover() func(context.Context, sandbox.ExecAsk) bool {
	return t.approveExec
}

// approveExec decides about one program waiting at its exec stop and
// records the answer; any failure denies.
func (t *Tools) approveExec(ctx context.Context, ask sandbox.ExecAsk) bool {
	subject := "exec " + quoteArgv(ask.Argv)
	if t.approved[ask.Rule] {
		err := t.record(&audit.Record{Event: audit.EventApproval, CallID: t.current, Tool: ToolExecuteBash,
			Decision: policy.Allow.String(), Rule: ask.Rule, DecidedBy: "call-approval",
			Reason: "the call was approved under this rule before it ran", Argv: ask.Argv, PID: ask.PID, Scope: audit.ScopeOnce})
		return err == nil
	}
	if t.Learn {
		err := t.record(&audit.Record{Event: audit.EventApproval, CallID: t.current, Tool: ToolExecuteBash,
			Decision: audit.DecisionWouldAsk, Rule: ask.Rule, DecidedBy: audit.DecidedByLearn,
			Reason: "a learning run: allowed and recorded", Argv: ask.Argv, PID: ask.PID})
		return err == nil
	}
	switch t.Approver.(type) {
	case nil, DenyAll:
		return false
	}
	dec := policy.Decision{Verdict: policy.Ask, Rule: ask.Rule, Reason: ask.Reason}
	ap, err := t.Approver.Approve(ctx, ApprovalRequest{CallID: t.current, Tool: ToolExecuteBash, Subject: subject, Decision: dec})
	if err != nil {
		return false
	}
	v := policy.Deny
	if ap.Allow {
		v = policy.Allow
	}
	err = t.record(&audit.Record{Event: audit.EventApproval, CallID: t.current, Tool: ToolExecuteBash,
		Decision: v.String(), Rule: ask.Rule, DecidedBy: ap.DecidedBy, Approver: ap.Approver,
		Reason: ap.Note, Argv: ask.Argv, PID: ask.PID, Scope: scopeOf(ap), Prompt: ap.Prompt})
	return err == nil && ap.Allow
}

// maxListed bounds the denied execs and alarms spelled out to the model
// and on the terminal; the audit log has every one.
const maxListed = 10

// recordExecTime writes one audit record per denied exec and per alarm of
// a call.
func (t *Tools) recordExecTime(callID string, res *sandbox.ExecResult) error {
	for _, d := range res.DeniedExecs {
		if err := t.record(&audit.Record{Event: audit.EventExecDenied, CallID: callID, Tool: ToolExecuteBash,
			Decision: d.Decision, Rule: d.Rule, Reason: d.Reason, DecidedBy: audit.DecidedByExecutor,
			Argv: d.Argv, PID: d.PID, Exe: d.Exe}); err != nil {
			return err
		}
	}
	for _, a := range res.Alarms {
		if err := t.record(&audit.Record{Event: audit.EventAlarm, CallID: callID, Tool: ToolExecuteBash,
			Rule: a.Rule, Path: a.Path, What: a.What, Action: a.Action, Argv: a.Argv, Parents: a.Parents}); err != nil {
			return err
		}
	}
	return nil
}

// programs converts the executor's program counts for the audit log.
func programs(ps []sandbox.ProgramCount) []audit.Program {
	if len(ps) == 0 {
		return nil
	}
	out := make([]audit.Program, len(ps))
	for i, p := range ps {
		out[i] = audit.Program{Name: p.Name, Program: p.Program, Toolchain: p.Toolchain, Unknown: p.Unknown, Count: p.Count}
	}
	return out
}

// execTimeText tells the model what the layers below the up-front check
// did during a call: which programs were stopped at exec time and why,
// and which effects were undone.
func execTimeText(res *sandbox.ExecResult) string {
	var b strings.Builder
	for i, d := range res.DeniedExecs {
		if i == maxListed {
			fmt.Fprintf(&b, "[%d more programs were denied at exec time]\n", len(res.DeniedExecs)-maxListed)
			break
		}
		what := "denied by policy"
		if d.Decision == "ask" {
			what = "needs approval and was not approved"
		}
		fmt.Fprintf(&b, "denied at exec time: %s (pid %d) %s", textutil.Clip(quoteArgv(d.Argv), 300), d.PID, what)
		if d.Rule != "" {
			fmt.Fprintf(&b, ", rule %s", d.Rule)
		}
		if d.Reason != "" {
			fmt.Fprintf(&b, ": %s", textutil.Clip(d.Reason, 300))
		}
		b.WriteString(". It was killed before it ran; the rest of the command went on without it.\n")
	}
	effects := 0
	for _, a := range res.Alarms {
		if programAlarm(a) {
			continue // for reviewers (the audit log), not the model
		}
		if effects == maxListed {
			b.WriteString("[more effects were undone]\n")
			break
		}
		effects++
		b.WriteString(alarmLine(a) + "\n")
	}
	if b.Len() > 0 {
		b.WriteString("Do not try to reach these another way; use another approach, or explain in your final answer what you could not do.\n")
	}
	return b.String()
}

// programAlarm tells the alarms about a program that ran (not predicted
// up front, or not one of the image's executables) from effects undone.
func programAlarm(a sandbox.Alarm) bool {
	return a.What == "unexpected_exec" || a.What == "unknown_binary"
}

// alarmLine describes one effect undone after a call, or a program that
// ran unpredicted or from outside the image.
func alarmLine(a sandbox.Alarm) string {
	if programAlarm(a) {
		s := a.What + ": " + textutil.Clip(quoteArgv(a.Argv), 200)
		if len(a.Parents) > 0 {
			s += " (from " + textutil.Clip(strings.Join(a.Parents, " < "), 200) + ")"
		}
		return s
	}
	var b strings.Builder
	if a.Action == "held" {
		fmt.Fprintf(&b, "held on the host, not in the workspace: %s", a.Path)
		if a.Rule != "" {
			fmt.Fprintf(&b, " (rule %s)", a.Rule)
		}
		return b.String()
	}
	b.WriteString("undone after the call: ")
	if a.Path != "" {
		b.WriteString(a.Path + " ")
	}
	fmt.Fprintf(&b, "%s → %s", a.What, a.Action)
	if a.Rule != "" {
		fmt.Fprintf(&b, " (rule %s)", a.Rule)
	}
	return b.String()
}

// quoteArgv renders argv as one shell-quoted line.
func quoteArgv(argv []string) string {
	words := make([]string, len(argv))
	for i, a := range argv {
		q, err := syntax.Quote(a, syntax.LangBash)
		if err != nil {
			q = fmt.Sprintf("%q", a)
		}
		words[i] = q
	}
	return strings.Join(words, " ")
}

// redactExecTime returns the denied execs and alarms of a call with
// secrets redacted, for the Outcome.
func (t *Tools) redactExecTime(x *sandbox.ExecResult) ([]sandbox.DeniedExec, []sandbox.Alarm) {
	var ds []sandbox.DeniedExec
	for _, d := range x.DeniedExecs {
		argv := make([]string, len(d.Argv))
		for i, a := range d.Argv {
			argv[i] = t.redact(a)
		}
		d.Argv, d.Exe, d.Reason = argv, t.redact(d.Exe), t.redact(d.Reason)
		ds = append(ds, d)
	}
	var as []sandbox.Alarm
	for _, a := range x.Alarms {
		a.Path = t.redact(a.Path)
		if a.Argv != nil {
			argv := make([]string, len(a.Argv))
			for i, s := range a.Argv {
				argv[i] = t.redact(s)
			}
			a.Argv = argv
		}
		if a.Parents != nil {
			ps := make([]string, len(a.Parents))
			for i, s := range a.Parents {
				ps[i] = t.redact(s)
			}
			a.Parents = ps
		}
		as = append(as, a)
	}
	return ds, as
}
