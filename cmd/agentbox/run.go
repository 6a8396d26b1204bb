package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/agentbox/agentbox"
	"github.com/agentbox/agentbox/agent"
	"github.com/agentbox/agentbox/sandbox"
	"github.com/agentbox/agentbox/session"
	"github.com/agentbox/agentbox/workspace"
	"github.com/urfave/cli/v2"
)

func runCommand() *cli.Command {
	return &cli.Command{
		Name:      "run",
		Usage:     "run the agent on a task (the main job)",
		ArgsUsage: "TASK...",
		Flags: append(sandboxFlags(),
			devcontainerFlag(),
			&cli.StringFlag{Name: "model", Usage: "model name (default: $OPENAI_MODEL, else " + agent.DefaultModel + ")"},
			&cli.StringFlag{Name: "base-url", Usage: "OpenAI-compatible endpoint (default: $OPENAI_BASE_URL, else OpenAI)"},
			&cli.StringFlag{Name: "script", Usage: "replay a YAML file of assistant turns instead of calling a model"},
			noStreamFlag(),
			&cli.IntFlag{Name: "max-steps", Value: agent.DefaultMaxSteps, Usage: "stop after this many model calls (exit 3)"},
			&cli.IntFlag{Name: "max-calls-per-turn", Value: agent.DefaultMaxCallsPerTurn, Usage: "run at most this many tool calls of one model turn; the model is told about the rest"},
			&cli.DurationFlag{Name: "timeout", Usage: "session timeout (default: the policy's sandbox.timeouts.session)"},
			&cli.BoolFlag{Name: "plan", Usage: "ask the model for a 3-5 step plan first, then run the steps in order"},
			&cli.BoolFlag{Name: "no-memory", Usage: "do not read or write this workspace's memory of past runs"},
			approveFlag(),
			&cli.StringFlag{Name: "workspace-mode", Usage: "rw | ro | copy — copy: the agent works on a private copy; see --apply (default: the policy's sandbox.workspace)"},
			learnFlag(),
			&cli.BoolFlag{Name: "apply", Usage: "with copy: apply the copy's changes to the workspace at the end, unless the workspace changed meanwhile"},
			&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "print only the final answer"},
			&cli.BoolFlag{Name: "json", Usage: "print only one final JSON object on stdout (status, answer, steps, tokens, session, files changed)"},
			&cli.BoolFlag{Name: "json-events", Usage: "stream one JSON event per line on stdout (step, model_text, model_delta, tool_started, tool_call, notice, end)"},
		),
		Action: func(c *cli.Context) error {
			task := strings.TrimSpace(strings.Join(c.Args().Slice(), " "))
			if f, ok := forkedRun(c); ok {
				task = f.task // started by agentbox fork
			}
			if task == "" {
				return usageError{errors.New(`run needs a task: agentbox run "count the Python files here"`)}
			}
			if err := checkOutputFlags(c); err != nil {
				return err
			}
			if c.Int("max-steps") <= 0 {
				return usageError{errors.New("--max-steps must be at least 1")}
			}
			p, err := loadPolicy(c)
			if err != nil {
				return err
			}
			mode := p.Sandbox.Workspace
			if v := c.String("workspace-mode"); v != "" {
				mode = sandbox.WorkspaceMode(v)
			}
			if !mode.Valid() {
				return usageError{fmt.Errorf("--workspace-mode %q: want rw, ro or copy", mode)}
			}
			if c.Bool("learn") {
				if c.IsSet("workspace-mode") && mode != sandbox.WorkspaceCopy {
					return usageError{errors.New("--learn works on a copy: drop --workspace-mode or use copy")}
				}
				mode = sandbox.WorkspaceCopy
			}
			caps := capabilities(c)
			// Without host mounts the policy's default rw is a copy,
			// reviewed after; rw asked for by name is refused.
			if mode, err = caps.Mode(mode, c.IsSet("workspace-mode")); err != nil {
				return usageError{fmt.Errorf("--workspace-mode: %w", err)}
			}
			if c.Bool("apply") && mode != sandbox.WorkspaceCopy {
				return usageError{errors.New("--apply goes with --workspace-mode copy")}
			}
			cfg, err := sandboxConfig(c, p)
			if err != nil {
				return err
			}
			setup, err := applyDevcontainer(c, p, &cfg)
			if err != nil {
				return err
			}
			appr, err := approver(c)
			if err != nil {
				return err
			}
			printer := newPrinter(c)
			if _, deny := appr.(agent.DenyAll); printer.Live && !deny {
				appr = agent.HoldingLive(printer, appr) // the question stays on screen
			}
			model, name, err := newModel(c, printer)
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
			printer.Redact = log.Redact
			events := agent.Events(printer)
			if c.Bool("json-events") {
				events = &agent.JSONEvents{W: c.App.Writer, Redact: log.Redact}
			}
			var mem *agent.Memory
			if !c.Bool("no-memory") {
				if path, err := agent.DefaultMemoryPath(os.Getenv, cfg.Workspace); err == nil {
					mem = &agent.Memory{Path: path}
				}
			}
			timeout := c.Duration("timeout")
			if timeout <= 0 {
				timeout = p.Sandbox.SessionTimeout
			}
			if caps.User.Host() && cfg.User == "" && sandbox.IsRootUser(sandbox.DefaultUser(cfg.Workspace)) && !printer.Quiet {
				printer.Notice("running as root on a workspace root owns: the sandbox runs as uid 0 too, with every capability dropped (set sandbox.user in the policy to change it)")
			}
			return withCappedRuntime(c, func(rt *cappedRuntime) error {
				_, _ = rt.GC(c.Context, sandbox.GCOptions{})
				// The sandbox starts while the first model request is in
				// flight (session.Run).
				s, err := session.Open(c.Context, rt, session.Options{
					Policy: p, Sandbox: cfg, Mode: mode, Audit: log, Approver: appr, Apply: c.Bool("apply"), Lazy: true, Learn: c.Bool("learn"),
					NoOverlay: os.Getenv("AGENTBOX_OVERLAY") == "off", NoStaging: stagingOff(),
					Record: session.Record{Task: task, Model: name, Version: agentbox.Version},
					Notice: func(msg string) { fmt.Fprintln(c.App.ErrWriter, msg) },
				})
				if err != nil {
					return exitWith(errorExitCode(err), err)
				}
				if d := s.Workspace().Describe(); d != "" && !c.Bool("quiet") {
					fmt.Fprintln(c.App.ErrWriter, d)
				}
				if !printer.Quiet {
					header{session: s.ID(), workspace: cfg.Workspace, policy: p, network: cfg.Network, mode: s.Mode(), audit: auditPathOf(c), learn: s.Learn(), git: cfg.GitIdentity}.print(c.App.ErrWriter)
				}
				res, _, err := session.Run(c.Context, s, agent.RunConfig{
					Task: task, Model: model, ModelName: name, Workspace: s.Config().Workspace,
					MaxSteps: c.Int("max-steps"), MaxCallsPerTurn: c.Int("max-calls-per-turn"), SessionTimeout: timeout, Plan: c.Bool("plan"),
					Memory: mem, Events: events, Setup: setup,
				})
				if !s.Recorded() {
					return err // the sandbox did not start; nothing was recorded
				}
				printResult(c, res, log.Redact)
				if errors.Is(err, workspace.ErrConflict) || errors.Is(err, workspace.ErrIncomplete) || errors.Is(err, workspace.ErrGuarded) {
					return exitWith(exitFailed, err)
				}
				if err != nil {
					return runError(err, !printer.Quiet)
				}
				return nil
			})
		},
	}
}

// runError maps the run's error to an exit code (docs/DESIGN.md). When the
// printer already reported the error, only the code is returned.
func runError(err error, reported bool) error {
	if reported {
		return exitWith(errorExitCode(err), nil)
	}
	return exitWith(errorExitCode(err), err)
}

// newModel is the scripted model (--script) or the OpenAI-compatible one.
func newModel(c *cli.Context, printer *agent.Printer) (agent.Model, string, error) {
	spec := agent.ModelSpec{ScriptPath: c.String("script"), Config: agent.ConfigFromEnv(os.Getenv)}
	if spec.ScriptPath != "" {
		s, err := agent.LoadScript(spec.ScriptPath)
		if err != nil {
			return nil, "", exitWith(exitUsage, err)
		}
		spec.Script = s
	}
	mc := &spec.Config
	if v := c.String("model"); v != "" {
		mc.Model = v
	}
	if v := c.String("base-url"); v != "" {
		mc.BaseURL = v
	}
	if c.Bool("no-stream") {
		mc.NoStream = true
	}
	mc.Retry.OnRetry = printer.Retry
	m, name, err := agent.NewModel(spec)
	if err != nil {
		return nil, "", exitWith(exitUsage, err)
	}
	return m, name, nil
}

// noStreamFlag turns off streamed model replies.
func noStreamFlag() cli.Flag {
	return &cli.BoolFlag{Name: "no-stream", Usage: "ask the model for whole replies, not streamed ones (also " + agent.EnvStream + "=off); by default replies stream, and agentbox stops streaming by itself when the endpoint refuses it"}
}
