package session

import (
	"context"
	"fmt"

	"github.com/agentbox/agentbox/agent"
	"github.com/agentbox/agentbox/policy"
)

// Exec runs command as the session's one execute_bash call (agentbox
// exec) and closes the session. The policy decides (and asks) before
// anything starts: a command that will not run starts no sandbox, yet
// session_start, the call and session_end are recorded. The Outcome says
// what happened; the error is set when the sandbox or the audit log failed
// (the Outcome's Err), or when ctx ended.
func Exec(ctx context.Context, s *Session, command string) (agent.Outcome, Closed, error) {
	t := s.tools
	run := true
	var answered agent.Approver
	switch dec := t.Policy.Decide(policy.Action{Kind: policy.Command, Command: command}); {
	case s.o.Learn: // the pipeline records would_ask/would_deny and runs it
	case dec.Verdict == policy.Deny:
		run = false
	case dec.Verdict == policy.Ask:
		appr := t.Approver
		if appr == nil {
			appr = agent.DenyAll{}
		}
		ap, err := appr.Approve(ctx, agent.ApprovalRequest{CallID: "exec", Tool: agent.ToolExecuteBash, Subject: command, Decision: dec})
		if err != nil {
			closed, _ := s.Close(ctx, End{Status: agent.StatusError, Err: err})
			return agent.Outcome{}, closed, fmt.Errorf("asking for approval: %w", err)
		}
		// The answer goes to the pipeline (after the setup commands, which
		// are asked about on their own): nobody is asked twice.
		answered, run = agent.Answered(ap), ap.Allow
	}
	if run {
		if _, err := s.Start(ctx); err != nil {
			closed, _ := s.Close(ctx, End{Status: agent.StatusError, Err: err})
			return agent.Outcome{}, closed, err
		}
	} else if err := s.recordStart(nil); err != nil {
		closed, _ := s.Close(ctx, End{Status: agent.StatusError, Err: err})
		return agent.Outcome{}, closed, err
	}
	var o agent.Outcome
	var setupErr error
	if run {
		o, setupErr = t.Setup(ctx, s.o.Setup, s.o.SetupEvents)
	}
	if setupErr == nil {
		if answered != nil {
			t.Approver = answered
		}
		o = t.Exec(ctx, command)
	} else if o.Err == nil {
		o.Err = setupErr
	}
	if err := s.pullChanges(ctx); err != nil && o.Err == nil {
		o.Err = err // the workspace copy misses the command's changes
	}
	closed, cerr := s.Close(ctx, End{Status: agent.ExecStatus(ctx, o), Steps: 1, Err: o.Err})
	switch {
	case o.Err != nil:
		return o, closed, o.Err
	case ctx.Err() != nil:
		return o, closed, context.Cause(ctx)
	}
	return o, closed, cerr
}
