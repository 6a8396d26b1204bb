package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/agentbox/agentbox"
	"github.com/agentbox/agentbox/agent"
	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/sandbox"
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
			&cli.IntFlag{Name: "max-steps", Value: agent.DefaultMaxSteps, Usage: "stop after this many model calls (exit 3)"},
			&cli.IntFlag{Name: "max-calls-per-turn", Value: agent.DefaultMaxCallsPerTurn, Usage: "run at most this many tool calls of one model turn; the model is told about the rest"},
			&cli.DurationFlag{Name: "timeout", Usage: "session timeout (default: the policy's sandbox.timeouts.session)"},
			&cli.BoolFlag{Name: "plan", Usage: "ask the model for a 3-5 step plan first, then run the steps in order"},
			&cli.BoolFlag{Name: "no-memory", Usage: "do not read or write this workspace's memory of past runs"},
			approveFlag(),
			&cli.StringFlag{Name: "workspace-mode", Usage: "rw | ro | copy — copy: the agent works on a private copy; see --apply (default: the policy's sandbox.workspace)"},
			&cli.BoolFlag{Name: "apply", Usage: "with copy: apply the copy's changes to the workspace at the end, unless the workspace changed meanwhile"},
			&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "print only the final answer"},
			&cli.BoolFlag{Name: "json", Usage: "print only one final JSON object on stdout (status, answer, steps, tokens, session, files changed)"},
			&cli.BoolFlag{Name: "json-events", Usage: "stream one JSON event per line on stdout (step, model_text, tool_started, tool_call, notice, end)"},
		),
		Action: func(c *cli.Context) error {
			task := strings.TrimSpace(strings.Join(c.Args().Slice(), " "))
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
			caps := capabilities(c)
			// Without host mounts the policy's default rw is a copy,
			// reviewed after; rw asked for by name is refused.
			if mode, err = caps.Mode(mode, c.IsSet("workspace-mode")); err != nil {
				return usageError{fmt.Errorf("--workspace-mode: %w", err)}
			}
			if c.Bool("apply") && mode != sandbox.WorkspaceCopy {
				return usageError{errors.New("--apply goes with --workspace-mode copy")}
			}
			pp := *p
			pp.Sandbox.Workspace = mode
			if mode == sandbox.WorkspaceCopy {
				pp.Sandbox.Workspace = sandbox.WorkspaceRW // on the copy
			}
			cfg, err := sandboxConfig(c, &pp)
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
			var cp *workspace.Copy
			var live *workspace.Live
			liveUsed := false // a sandbox ran on it: its records stay, whatever happened
			if mode == sandbox.WorkspaceRW && caps.HostMounts && caps.OverlayStaging && !stagingOff() {
				if live, err = newLive(p, &cfg); err != nil {
					return exitWith(errorExitCode(err), err)
				}
				if !c.Bool("quiet") {
					fmt.Fprintln(c.App.ErrWriter, live.Describe())
				}
				defer func() {
					if live.State == workspace.StateLive && !liveUsed {
						_ = live.Remove() // the run never started
					}
				}()
			}
			if mode == sandbox.WorkspaceCopy {
				if cp, err = newCopyFor(caps, p, &cfg); err != nil {
					return exitWith(errorExitCode(err), err)
				}
				if !c.Bool("quiet") {
					fmt.Fprintln(c.App.ErrWriter, cp.Describe())
				}
				defer func() {
					if cp.State == workspace.StateRunning {
						_ = cp.Remove() // the run never started
					}
				}()
			}
			timeout := c.Duration("timeout")
			if timeout <= 0 {
				timeout = p.Sandbox.SessionTimeout
			}
			recordedMode := cfg.WorkspaceMode
			if cp != nil {
				recordedMode = sandbox.WorkspaceCopy
			}
			if caps.HostUser && cfg.User == "" && sandbox.IsRootUser(sandbox.DefaultUser(cfg.Workspace)) && !printer.Quiet {
				printer.Notice("running as root on a workspace root owns: the sandbox runs as uid 0 too, with every capability dropped (set sandbox.user in the policy to change it)")
			}
			var before *workspace.SnapshotJob
			if cp == nil && live == nil && cfg.WorkspaceMode != sandbox.WorkspaceRO {
				// The walk of the workspace overlaps the sandbox's start.
				before = workspace.StartSnapshot(cfg.Workspace)
				defer before.Wait()
			}
			return withRuntime(c, func(rt backend) error {
				_, _ = rt.GC(c.Context)
				// The sandbox starts while the first model request is in
				// flight (agent.RunConfig.Start). A copy named the session.
				if cfg.SessionID == "" {
					cfg.SessionID = sandbox.NewID()
				}
				tools, err := agent.NewTools(p, &cfg, log, appr)
				if err != nil {
					return exitWith(exitUsage, err)
				}
				tools.SessionID = cfg.SessionID
				changes := copyChanges(&cp)
				if live != nil {
					tools.Staged = live
					changes = liveChanges(c.Context, tools, live, c.App.ErrWriter)
				}
				closeSession := func() {
					if tools.Session != nil {
						closeOnCopy(c.Context, tools.Session, cp)
					}
				}
				defer closeSession()
				if !printer.Quiet {
					header{session: cfg.SessionID, workspace: cfg.Workspace, policy: p, network: cfg.Network, mode: recordedMode, audit: auditPathOf(c)}.print(c.App.ErrWriter)
				}
				res, err := agent.Run(c.Context, agent.RunConfig{
					Task: task, Model: model, ModelName: name, Tools: tools,
					Workspace: cfg.Workspace, WorkspaceMode: recordedMode,
					PolicyPath: p.Source(), PolicySHA256: p.SHA256, Version: agentbox.Version,
					MaxSteps: c.Int("max-steps"), MaxCallsPerTurn: c.Int("max-calls-per-turn"), SessionTimeout: timeout, Plan: c.Bool("plan"),
					Memory: mem, Events: events, Before: before, Setup: setup,
					Start: func(ctx context.Context) (sandbox.Session, error) {
						sess, err := rt.Start(ctx, cfg)
						if err != nil && cp != nil && cp.Kind == workspace.KindOverlay && isMountError(err) {
							// The engine could not mount the overlay: a real copy.
							fmt.Fprintf(c.App.ErrWriter, "the engine could not mount the overlay (%v); falling back to a real copy\n", err)
							_ = cp.Remove()
							if cp, err = newCopyWith(p, &cfg, true); err != nil {
								return nil, err
							}
							fmt.Fprintln(c.App.ErrWriter, cp.Describe())
							sess, err = rt.Start(ctx, cfg)
						}
						return sess, err
					},
					Changes: changes,
				})
				if tools.Session == nil {
					return err // the sandbox did not start; nothing was recorded
				}
				liveUsed = true
				if cp != nil {
					// Nothing may still run in the copy while it is recorded.
					closeSession()
					if aerr := finishCopy(c, cp, &res); aerr != nil && err == nil {
						err = aerr
					}
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

// runError maps the run's error to an exit code (DESIGN.md). When the
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
	mc.Retry.OnRetry = printer.Retry
	m, name, err := agent.NewModel(spec)
	if err != nil {
		return nil, "", exitWith(exitUsage, err)
	}
	return m, name, nil
}

// copyChanges is the run's change lister for the copy *cp (nil: snapshots);
// it reads *cp when called, as a fallback may have replaced the copy.
func copyChanges(cp **workspace.Copy) func() ([]audit.FileChange, error) {
	if *cp == nil {
		return nil
	}
	return func() ([]audit.FileChange, error) { return (*cp).Scan() }
}

// finishCopy records the copy's changes once the sandbox is gone, then
// applies them (--apply) or prints how to review and apply them.
func finishCopy(c *cli.Context, cp *workspace.Copy, res *agent.Result) error {
	w := c.App.ErrWriter
	changes, err := cp.Finish()
	if err != nil {
		return err
	}
	res.FilesChanged = changes
	if cp.DiskFull {
		fmt.Fprintf(w, "the session filled its disk bound (%s, sandbox.limits.disk): writes past it failed inside the sandbox with ENOSPC\n", cp.DiskBound)
	}
	n := len(workspace.Counted(changes))
	if n == 0 {
		return nil
	}
	if why := workspace.Incomplete(changes); why != "" {
		fmt.Fprintf(w, "the change list of session %s is INCOMPLETE (%s): nothing can be applied from it; the copy stays in %s\n", cp.Session, why, cp.Root)
		return fmt.Errorf("%w (%s)", workspace.ErrIncomplete, why)
	}
	if !c.Bool("apply") {
		fmt.Fprintf(w, "%d change(s) wait in session %s; the workspace is untouched.\n  review: agentbox changes %s\n  apply:  agentbox apply %s\n", n, cp.Session, cp.Session, cp.Session)
		return nil
	}
	if err := cp.Apply(); err != nil {
		return err
	}
	fmt.Fprintf(w, "applied %d change(s) to %s\n", n, cp.Workspace)
	return nil
}
