package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/workspace"
	"github.com/urfave/cli/v2"
	"mvdan.cc/sh/v3/syntax"
)

// forkCommand writes a staged session's workspace as it was after a call
// into a new directory and, given a task, starts a copy-mode session
// there with the policy the first session ran with.
func forkCommand() *cli.Command {
	return &cli.Command{
		Name: "fork",
		Usage: "start a new copy-mode session from the workspace of a staged (rw) session as it was right after CALL: " +
			"the checkpoint is written into DIR (new), then TASK runs there as `agentbox run --workspace DIR --workspace-mode copy` " +
			"with the first session's policy; without a TASK, only DIR is written and the run command printed",
		ArgsUsage: "SESSION STEP|CALL DIR | SESSION STEP|CALL --dir DIR [--] TASK...",
		Flags: append(runCommand().Flags,
			&cli.StringFlag{Name: "dir", Usage: "the new directory the checkpoint is written into (then every argument after CALL is the task)"}),
		Action: func(c *cli.Context) error {
			args := c.Args().Slice()
			dir, task := c.String("dir"), []string(nil)
			if len(args) >= 2 {
				task = args[2:]
			}
			if dir == "" && len(task) > 0 {
				dir, task = task[0], task[1:]
			}
			if len(args) < 2 || dir == "" {
				return usageError{errors.New("fork needs SESSION, CALL (the step number the run printed, [6/30] is 6, or a call id; see agentbox changes SESSION) and a new DIR (third argument, or --dir DIR before SESSION, then an optional TASK)")}
			}
			dst, err := filepath.Abs(dir)
			if err != nil {
				return exitWith(exitUsage, err)
			}
			// An existing DIR (".", "~", the user's) is refused first,
			// whatever else is wrong, and nothing is done there.
			if err := workspace.ForkDirFree(dst); err != nil {
				return exitWith(exitUsage, err)
			}
			cp, st, err := loadEndedStage(args[0])
			if err != nil {
				return err
			}
			start, serr := sessionStart(c, cp.Session)
			p, ppath, err := forkPolicy(c, cp.Session, start, serr)
			if err != nil {
				return err
			}
			call, _, err := resolveStep(c, cp.Session, st, args[1], true)
			if err != nil {
				return err
			}
			seq, err := writeFork(c, cp, st, call, dst)
			if err != nil {
				return err
			}
			taskText := strings.TrimSpace(strings.Join(task, " "))
			if taskText == "" {
				// The command to continue: the session's own task (or,
				// unknown, none: the user's goes at the end).
				was, then := "", "continue with (your task at the end)"
				if start != nil && strings.TrimSpace(start.Task) != "" {
					was, then = start.Task, "continue with (the session's task; change it at the end)"
				}
				fmt.Fprintf(c.App.ErrWriter, "%s is the workspace after checkpoint %d of session %s; %s:\n  %s\n", vis(dst), seq, cp.Session, then, policy.Visible(forkRunLine(c, dst, ppath, was)))
				return nil
			}
			cmd := forkRunLine(c, dst, ppath, taskText)
			fmt.Fprintf(c.App.ErrWriter, "%s is the workspace after checkpoint %d of session %s; running:\n  %s\n", vis(dst), seq, cp.Session, policy.Visible(cmd))
			for name, v := range map[string]string{"workspace": dst, "workspace-mode": "copy"} {
				if err := c.Set(name, v); err != nil {
					return exitWith(exitUsage, err)
				}
			}
			c.Context = context.WithValue(c.Context, forkKey{}, forkRun{task: taskText, policy: p})
			return runCommand().Action(c)
		},
	}
}

// writeFork writes the checkpoint into dst and records the fork in the
// audit log (a changes record naming the source session and call); the
// log is closed before a forked session opens it.
func writeFork(c *cli.Context, cp *workspace.Copy, st *workspace.Stage, call, dst string) (int, error) {
	log, err := openAuditLog(c, []*policy.Policy{policy.Default()}, []mountedDir{{dir: cp.Workspace}, {dir: dst}})
	if err != nil {
		return 0, err
	}
	defer log.Close()
	seq, ferr := st.Fork(call, dst, workspace.DefaultMaxCopyBytes)
	rec := &audit.Record{Event: audit.EventChanges, Session: cp.Session, CallID: call, Workspace: dst,
		Reason: fmt.Sprintf("fork of %s after checkpoint %d", cp.Workspace, seq)}
	if ferr != nil {
		rec.Error = ferr.Error()
	}
	if err := log.Append(rec); err != nil {
		return 0, exitWith(exitFailed, fmt.Errorf("audit log: %w", err))
	}
	if ferr != nil {
		// Fork removes only what it wrote itself (never dst, which may
		// be the user's).
		if errors.Is(ferr, workspace.ErrForkExists) {
			return 0, exitWith(exitUsage, ferr)
		}
		return 0, exitWith(exitFailed, ferr)
	}
	return seq, nil
}

// forkKey carries a fork's task and policy into the run it starts.
type forkKey struct{}

type forkRun struct {
	task   string
	policy *policy.Policy
}

// forkedRun is the fork a run was started by (ok false: an ordinary run).
func forkedRun(c *cli.Context) (forkRun, bool) {
	if c.Context == nil {
		return forkRun{}, false
	}
	f, ok := c.Context.Value(forkKey{}).(forkRun)
	return f, ok
}

// sessionStart is the session's session_start record in the audit log
// (nil, and the error saying why, when it cannot be found).
func sessionStart(c *cli.Context, session string) (*audit.Record, error) {
	logPath := auditPathOf(c)
	f, err := os.Open(logPath)
	if err != nil {
		return nil, exitWith(exitUsage, fmt.Errorf("reading the audit log for the policy of session %s: %w; pass --audit or --policy", session, err))
	}
	defer f.Close()
	var start *audit.Record
	err = audit.Scan(f, func(_ int, r audit.Record) error {
		if r.Session == session && r.Event == audit.EventSessionStart {
			start = &r
		}
		return nil
	})
	if err != nil {
		return nil, exitWith(exitFailed, fmt.Errorf("reading %s: %w", logPath, err))
	}
	if start == nil {
		return nil, exitWith(exitUsage, fmt.Errorf("no session_start of session %s in %s: pass --audit (the log it was recorded in) or --policy", session, logPath))
	}
	return start, nil
}

// forkPolicy is the policy a fork runs with: --policy when given, else
// the one the session's session_start (start, or the error finding it)
// names, which must be unchanged (same sha256) or built in. path is ""
// for the built-in default.
func forkPolicy(c *cli.Context, session string, start *audit.Record, startErr error) (p *policy.Policy, path string, err error) {
	if c.IsSet("policy") {
		if p, err = loadPolicy(c); err != nil {
			return nil, "", err
		}
		return p, p.Source(), nil
	}
	switch {
	case startErr != nil:
		return nil, "", startErr
	case start.PolicyPath == "" || start.PolicyPath == "built-in":
		return policy.Default(), "", nil
	}
	p, err = policy.Load(start.PolicyPath)
	if err != nil {
		return nil, "", exitWith(exitUsage, fmt.Errorf("the policy of session %s: %w; pass --policy", session, err))
	}
	if start.PolicySHA256 != "" && p.SHA256 != start.PolicySHA256 {
		return nil, "", exitWith(exitUsage, fmt.Errorf("the policy session %s ran with (%s) changed since (sha256 %.12s, now %.12s); pass --policy to choose the fork's", session, start.PolicyPath, start.PolicySHA256, p.SHA256))
	}
	return p, start.PolicyPath, nil
}

// forkRunLine is the run command that continues from a fork, complete
// when task is not "" (after --: a task that starts with - stays one),
// whole (never clipped) and on one line.
func forkRunLine(c *cli.Context, dir, policyPath, task string) string {
	line := []string{"agentbox", "run", "--workspace", dir, "--workspace-mode", "copy"}
	if policyPath != "" {
		line = append(line, "--policy", policyPath)
	}
	// What fork was given is kept: the printed command runs the same way.
	for _, f := range []string{"image", "script", "audit", "network", "model", "base-url", "approve", "backend"} {
		if c.IsSet(f) && c.String(f) != "" {
			line = append(line, "--"+f, c.String(f))
		}
	}
	if task != "" {
		line = append(line, "--", task)
	}
	for i, w := range line {
		line[i] = shellQuote(w)
		if strings.ContainsAny(w, "\n\t") || policy.Visible(w) != w {
			if q, err := syntax.Quote(w, syntax.LangBash); err == nil {
				line[i] = q // $'…': one line, every character escaped
			}
		}
	}
	return strings.Join(line, " ")
}
