package main

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/agentbox/agentbox"
	"github.com/agentbox/agentbox/agent"
	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/sandbox"
	"github.com/agentbox/agentbox/session"
	"github.com/agentbox/agentbox/workspace"
	"github.com/urfave/cli/v2"
)

func execCommand() *cli.Command {
	return &cli.Command{
		Name:      "exec",
		Usage:     "run one bash command in a fresh sandbox, under the policy",
		ArgsUsage: "-- SCRIPT | -- COMMAND ARG...",
		Flags: append(sandboxFlags(),
			devcontainerFlag(),
			&cli.DurationFlag{Name: "timeout", Usage: "kill the command (and everything it started) after this long (default: the policy's call timeout)"},
			approveFlag(),
			learnFlag(),
			&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "no start header: only the command's output (and errors) on stderr"},
			&cli.BoolFlag{Name: "json", Usage: "print one JSON object instead of the output"},
			&cli.BoolFlag{Name: "json-events", Usage: "stream one JSON event per line on stdout (start, tool_started, output, tool_call, end)"},
		),
		Action: execAction,
	}
}

func execAction(c *cli.Context) error {
	command := execScript(c.Args().Slice())
	if strings.TrimSpace(command) == "" {
		return usageError{errors.New("exec needs a command: agentbox exec -- 'ls -la'")}
	}
	if err := checkOutputFlags(c); err != nil {
		return err
	}
	p, err := loadPolicy(c)
	if err != nil {
		return err
	}
	cfg, err := sandboxConfig(c, p)
	if err != nil {
		return err
	}
	before, err := applyDevcontainer(c, p, &cfg)
	if err != nil {
		return err
	}
	timeout := c.Duration("timeout")
	if timeout <= 0 {
		timeout = p.Sandbox.CallTimeout
	}
	appr, err := approver(c)
	if err != nil {
		return err
	}
	log, err := openAudit(c, p, cfg.Workspace)
	if err != nil {
		return err
	}
	defer log.Close()
	if cfg, err = agent.WithEgress(c.Context, cfg, p, log); err != nil {
		return exitWith(exitUsage, err)
	}
	// The devcontainer's setup commands get a line each, as a run's calls
	// (not a live one: their output streams).
	setupEv := newPrinter(c)
	setupEv.Live, setupEv.Redact = false, log.Redact
	return withCappedRuntime(c, func(rt *cappedRuntime) error {
		_, _ = rt.GC(c.Context, sandbox.GCOptions{}) // a cheap gc first: sandboxes of dead owners go
		// The policy decides before the sandbox starts (session.Exec).
		s, err := session.Open(c.Context, rt, session.Options{
			Policy: p, Sandbox: cfg, Audit: log, Approver: appr, Lazy: true, Learn: c.Bool("learn"),
			NoOverlay: os.Getenv("AGENTBOX_OVERLAY") == "off", NoStaging: stagingOff(),
			Record: session.Record{Task: command, Version: agentbox.Version}, Setup: before, SetupEvents: setupEv,
			Notice: func(msg string) { fmt.Fprintln(c.App.ErrWriter, msg) },
		})
		if err != nil {
			return exitWith(errorExitCode(err), err)
		}
		tools := s.Tools()
		tools.CallTimeout = timeout
		start := agent.SessionStart{Session: s.ID(), Policy: p.Source(), Network: string(orNone(cfg.Network)),
			Workspace: cfg.Workspace, WorkspaceMode: string(s.Config().WorkspaceMode), Audit: auditPathOf(c), GitIdentity: cfg.GitIdentity}
		if cfg.Network == sandbox.NetworkProxy {
			start.Broker = agent.BrokerSummary(p)
		}
		ctx, out := execOutput(c, tools, start)
		defer out.stop()
		if out.events != nil {
			out.events.ToolStarted(1, agent.ToolExecuteBash, command)
		}
		o, _, err := session.Exec(ctx, s, command)
		if out.stdoutClosed(ctx) {
			// Like a local command whose reader went away (`| head -1`).
			return exitWith(exitSIGPIPE, nil)
		}
		if errors.Is(err, workspace.ErrConflict) || errors.Is(err, workspace.ErrIncomplete) || errors.Is(err, workspace.ErrGuarded) {
			return exitWith(exitFailed, err)
		}
		if err != nil {
			return err
		}
		return printExec(c, o, timeout, out, s.ID())
	})
}

func printExec(c *cli.Context, o agent.Outcome, timeout time.Duration, out *execOut, session string) error {
	code, err := execExit(c, o, timeout)
	switch {
	case out.events != nil:
		out.events.ToolCall(1, 1, o)
		out.events.ExecEnd(session, agent.ExecStatus(c.Context, o), code, o)
	case c.Bool("json"):
		if err := printExecJSON(c, o); err != nil {
			return err
		}
	default:
		// What the layers below the up-front check did goes to stderr.
		(&agent.Printer{W: c.App.ErrWriter, Color: colorOn(os.Stderr)}).ExecTime(o)
	}
	if code == 0 && err == nil {
		return nil
	}
	return exitWith(code, err)
}

// execExit is the exit code of an exec and the message that goes with it.
func execExit(c *cli.Context, o agent.Outcome, timeout time.Duration) (int, error) {
	switch {
	case o.Denied:
		if o.Policy == policy.Ask.String() {
			return statusExitCode(agent.StatusDenied), fmt.Errorf("denied: %s needs approval (%s) and was not approved (%s); nothing ran", o.Rule, o.Reason, approvalHint(c))
		}
		return statusExitCode(agent.StatusDenied), fmt.Errorf("denied by policy: %s; nothing ran (see agentbox policy explain)", o.Reason)
	case o.TimedOut:
		return statusExitCode(agent.StatusTimedOut), fmt.Errorf("command timed out after %s; everything it started was killed; to allow longer, pass --timeout %s (or set sandbox.timeouts.call in the policy)", timeout, 2*timeout)
	case o.Interrupted:
		return statusExitCode(agent.StatusInterrupted), errors.New("interrupted: the command and everything it started were killed")
	case o.OOMKilled:
		return o.ExitCode, errors.New("command was killed: out of memory (raise sandbox.limits.memory in the policy)")
	}
	return o.ExitCode, nil
}

func approvalHint(c *cli.Context) string {
	switch c.String("approve") {
	case "deny":
		return "--approve deny"
	case "", "prompt":
		if c.String("approve") == "" && !isTerminal(os.Stdin) {
			return "no terminal to ask on; pass --approve allow to allow it"
		}
		return "refused at the prompt"
	}
	return "refused"
}
