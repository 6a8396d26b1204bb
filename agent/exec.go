package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/user"

	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/sandbox"
	"github.com/agentbox/agentbox/workspace"
)

// Exec statuses, recorded in session_end.
const (
	StatusDenied   = "denied"    // the policy (or the approver) refused the command
	StatusFailed   = "failed"    // the command ran and exited non-zero
	StatusTimedOut = "timed_out" // the command hit its call timeout
)

// ExecConfig is one `agentbox exec`: a single execute_bash call in a fresh
// sandbox, with the same pipeline and audit records as `agentbox run`.
type ExecConfig struct {
	Command string
	// Setup are commands run first in the same sandbox, each an ordinary
	// tool call under the policy and audit (a devcontainer's lifecycle
	// commands); the first that fails stops the rest and Command.
	Setup []string
	// Tools carries the policy, audit log, approver and limits. Its
	// Session is filled in by Start; Start is not called when the policy
	// denies the command outright, so a denied command starts nothing.
	Tools *Tools
	// Start starts the sandbox with the given session id.
	Start func(ctx context.Context, sessionID string) (sandbox.Session, error)

	Workspace                string
	WorkspaceMode            sandbox.WorkspaceMode
	PolicyPath, PolicySHA256 string
	Version                  string
	// Changes, when set, lists what the session changed instead of
	// snapshots of the workspace (a staged workspace).
	Changes func() ([]audit.FileChange, error)
}

// ExecOnce runs cfg.Command and records session_start, the tool call and
// session_end. The session it starts is closed before it returns. The
// Outcome says what happened; the error is set when the sandbox or the audit
// log failed (the Outcome's Err), or when ctx ended.
func ExecOnce(ctx context.Context, cfg ExecConfig) (Outcome, error) {
	t := cfg.Tools
	if t == nil || t.Policy == nil || t.Audit == nil || cfg.Start == nil {
		return Outcome{}, errors.New("agent.ExecOnce: Tools, Tools.Policy, Tools.Audit and Start are required")
	}
	if t.SessionID == "" {
		t.SessionID = sandbox.NewID()
	}
	start := &audit.Record{Event: audit.EventSessionStart, Session: t.SessionID, Task: cfg.Command,
		PolicyPath: cfg.PolicyPath, PolicySHA256: cfg.PolicySHA256, Workspace: cfg.Workspace,
		WorkspaceMode: string(cfg.WorkspaceMode), Version: cfg.Version, User: currentUser()}
	start.Host, _ = os.Hostname()

	// Decide (and ask) before starting anything: a command that will not
	// run starts no container. The answer is handed to the pipeline so
	// nobody is asked twice.
	run := true
	switch dec := t.Policy.Decide(policy.Action{Kind: policy.Command, Command: cfg.Command}); dec.Verdict {
	case policy.Deny:
		run = false
	case policy.Ask:
		appr := t.Approver
		if appr == nil {
			appr = DenyAll{}
		}
		ap, err := appr.Approve(ctx, ApprovalRequest{CallID: "exec", Tool: ToolExecuteBash, Subject: cfg.Command, Decision: dec})
		if err != nil {
			return Outcome{}, fmt.Errorf("asking for approval: %w", err)
		}
		t.Approver, run = answered{ap}, ap.Allow
	}
	var before workspace.Snap
	snap := false
	if run {
		sess, err := cfg.Start(ctx, t.SessionID)
		if err != nil {
			return Outcome{}, err
		}
		defer sess.Close(context.WithoutCancel(ctx))
		t.Session = sess
		info := sess.Info()
		start.Image, start.ImageID, start.ContainerID = info.Image, info.ImageID, info.ContainerID
		if cfg.Workspace != "" && cfg.WorkspaceMode != sandbox.WorkspaceRO && cfg.Changes == nil {
			if b, err := workspace.Snapshot(cfg.Workspace); err == nil {
				before, snap = b, true
			}
		}
	}
	if err := t.Audit.Append(start); err != nil {
		return Outcome{}, fmt.Errorf("audit log: %w; nothing runs without an audit record", err)
	}
	var o Outcome
	var setupErr error
	if run {
		o, setupErr = t.Setup(ctx, cfg.Setup)
	}
	if setupErr == nil {
		o = t.Exec(ctx, cfg.Command)
	} else if o.Err == nil {
		o.Err = setupErr
	}
	if err := t.PullChanges(ctx); err != nil && o.Err == nil {
		o.Err = err // the workspace copy misses the command's changes
	}
	end := &audit.Record{Event: audit.EventSessionEnd, Session: t.SessionID, Steps: 1, Status: ExecStatus(ctx, o)}
	if o.Err != nil {
		end.Error = t.redact(o.Err.Error())
	}
	if snap {
		if after, err := workspace.Snapshot(cfg.Workspace); err == nil {
			end.Files = workspace.Diff(before, after)
		}
	}
	if run && cfg.Changes != nil {
		ch, err := cfg.Changes()
		if err != nil && o.Err == nil {
			o.Err = err
		}
		end.Files = ch
	}
	endErr := t.Audit.Append(end)
	if o.Err != nil {
		return o, o.Err
	}
	if ctx.Err() != nil {
		return o, context.Cause(ctx)
	}
	if endErr != nil {
		return o, fmt.Errorf("audit log: %w", endErr)
	}
	return o, nil
}

// ExecStatus is the status of one exec, as session_end records it.
func ExecStatus(ctx context.Context, o Outcome) string {
	switch {
	case ctx.Err() != nil:
		return StatusInterrupted
	case o.Err != nil:
		return StatusError
	case o.Denied:
		return StatusDenied
	case o.TimedOut:
		return StatusTimedOut
	case o.ExitCode != 0:
		return StatusFailed
	}
	return StatusOK
}

func currentUser() string {
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return ""
}

// answered is an Approver that gives an answer obtained earlier.
type answered struct{ ap Approval }

func (a answered) Approve(context.Context, ApprovalRequest) (Approval, error) { return a.ap, nil }
