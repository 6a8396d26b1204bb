package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentbox/agentbox"
	"github.com/agentbox/agentbox/agent"
	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/sandbox"
	"github.com/agentbox/agentbox/workspace"
	"github.com/urfave/cli/v2"
)

func execCommand() *cli.Command {
	return &cli.Command{
		Name:      "exec",
		Usage:     "run one bash command in a fresh sandbox, under the policy",
		ArgsUsage: "-- SCRIPT | -- COMMAND ARG...",
		Flags: append(sandboxFlags(),
			&cli.DurationFlag{Name: "timeout", Usage: "kill the command (and everything it started) after this long (default: the policy's call timeout)"},
			approveFlag(),
			&cli.BoolFlag{Name: "json", Usage: "print one JSON object instead of the output"},
		),
		Action: func(c *cli.Context) error {
			command := execScript(c.Args().Slice())
			if strings.TrimSpace(command) == "" {
				return usageError{errors.New("exec needs a command: agentbox exec -- 'ls -la'")}
			}
			p, err := loadPolicy(c)
			if err != nil {
				return err
			}
			cfg, err := sandboxConfig(c, p)
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
			cfg = agent.WithEgress(cfg, p, log)
			cp, err := k8sCopy(c, p, &cfg)
			if err != nil {
				return err
			}
			if cp != nil {
				defer func() {
					if cp.State == workspace.StateRunning {
						_ = cp.Remove() // nothing ran
					}
				}()
			}
			return withRuntime(c, func(rt backend) error {
				_, _ = rt.GC(c.Context) // a cheap gc first: sandboxes of dead owners go
				tools, err := agent.NewTools(p, &cfg, log, appr)
				if err != nil {
					return exitWith(exitUsage, err)
				}
				tools.CallTimeout = timeout
				o, err := agent.ExecOnce(c.Context, agent.ExecConfig{
					Command: command, Tools: tools,
					Start: func(ctx context.Context, id string) (sandbox.Session, error) {
						cfg.SessionID = id
						return rt.Start(ctx, cfg)
					},
					Workspace: cfg.Workspace, WorkspaceMode: cfg.WorkspaceMode,
					PolicyPath: p.Source(), PolicySHA256: p.SHA256, Version: agentbox.Version,
				})
				if err != nil {
					return err
				}
				if cp != nil && tools.Session != nil {
					if ferr := finishCopy(c, cp, &agent.Result{}); ferr != nil {
						return exitWith(exitFailed, ferr)
					}
				}
				return printExec(c, o, timeout)
			})
		},
	}
}

func printExec(c *cli.Context, o agent.Outcome, timeout time.Duration) error {
	if c.Bool("json") {
		out := struct {
			Decision   string `json:"decision"`
			Rule       string `json:"rule,omitempty"`
			Reason     string `json:"reason,omitempty"`
			ExitCode   int    `json:"exit_code"`
			TimedOut   bool   `json:"timed_out"`
			OOMKilled  bool   `json:"oom_killed,omitempty"`
			DurationMS int64  `json:"duration_ms"`
			Output     string `json:"output"`
			// Encoding is "base64" when the output is not valid UTF-8, so
			// the bytes given are exactly the bytes the command wrote.
			Encoding  string `json:"output_encoding,omitempty"`
			Bytes     int64  `json:"output_bytes"`
			SHA256    string `json:"output_sha256,omitempty"`
			Truncated bool   `json:"truncated"`
			// What the executor stopped and undid.
			DeniedExecs []sandbox.DeniedExec `json:"denied_execs,omitempty"`
			Alarms      []sandbox.Alarm      `json:"alarms,omitempty"`
		}{o.Decision, o.Rule, o.Reason, o.ExitCode, o.TimedOut, o.OOMKilled, o.Duration.Milliseconds(),
			string(o.Output), "", o.OutBytes, o.OutSHA256, o.Truncated, o.DeniedExecs, o.Alarms}
		if !utf8.Valid(o.Output) {
			out.Output, out.Encoding = base64.StdEncoding.EncodeToString(o.Output), "base64"
		}
		if o.Denied {
			out.ExitCode = statusExitCode(agent.StatusDenied)
		}
		enc := json.NewEncoder(c.App.Writer)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(out); err != nil {
			return err
		}
	} else {
		_, _ = c.App.Writer.Write(o.Output)
	}
	// What the layers below the up-front check did goes to stderr.
	(&agent.Printer{W: c.App.ErrWriter, Color: colorOn(os.Stderr)}).ExecTime(o)
	switch {
	case o.Denied:
		if o.Policy == policy.Ask.String() {
			return exitWith(statusExitCode(agent.StatusDenied), fmt.Errorf("denied: %s needs approval (%s) and was not approved (%s); nothing ran", o.Rule, o.Reason, approvalHint(c)))
		}
		return exitWith(statusExitCode(agent.StatusDenied), fmt.Errorf("denied by policy: %s; nothing ran (see agentbox policy explain)", o.Reason))
	case o.TimedOut:
		return exitWith(statusExitCode(agent.StatusTimedOut), fmt.Errorf("command timed out after %s; everything it started was killed", timeout))
	case o.OOMKilled:
		return exitWith(o.ExitCode, errors.New("command was killed: out of memory (raise sandbox.limits.memory in the policy)"))
	case o.ExitCode != 0:
		return exitWith(o.ExitCode, nil)
	}
	return nil
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
