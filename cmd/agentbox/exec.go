package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentbox/agentbox/sandbox"
	"github.com/docker/docker/client"
	"github.com/urfave/cli/v2"
)

func execCommand() *cli.Command {
	return &cli.Command{
		Name:      "exec",
		Usage:     "run one bash command in a fresh sandbox, under the policy",
		ArgsUsage: "-- COMMAND",
		Flags: append(sandboxFlags(),
			&cli.DurationFlag{Name: "timeout", Usage: "kill the command (and everything it started) after this long (default: the policy's call timeout)"},
			&cli.BoolFlag{Name: "json", Usage: "print one JSON object instead of the output"},
		),
		Action: func(c *cli.Context) error {
			command := strings.Join(c.Args().Slice(), " ")
			if strings.TrimSpace(command) == "" {
				return usageError{errors.New("exec needs a command: agentbox exec -- 'ls -la'")}
			}
			cfg, err := sandboxConfig(c)
			if err != nil {
				return err
			}
			timeout := c.Duration("timeout")
			if timeout <= 0 {
				timeout = 60 * time.Second
			}
			// A cheap gc first: sandboxes of dead owners go.
			return withRuntime(c.Context, func(cl *client.Client, rt *sandbox.Docker) error {
				_, _ = sandbox.GC(c.Context, cl)
				sess, err := rt.Start(c.Context, cfg)
				if err != nil {
					return err
				}
				defer sess.Close(c.Context)
				res, err := sess.Exec(c.Context, sandbox.ExecRequest{Command: command, Timeout: timeout})
				if err != nil {
					return err
				}
				return printExec(c, res, timeout)
			})
		},
	}
}

func printExec(c *cli.Context, res sandbox.ExecResult, timeout time.Duration) error {
	if c.Bool("json") {
		out := struct {
			sandbox.ExecResult
			Output string `json:"output"`
		}{res, string(res.Output)}
		enc := json.NewEncoder(c.App.Writer)
		if err := enc.Encode(out); err != nil {
			return err
		}
	} else {
		_, _ = c.App.Writer.Write(res.Output)
	}
	switch {
	case res.TimedOut:
		return exitWith(exitTimeout, fmt.Errorf("command timed out after %s; everything it started was killed", timeout))
	case res.OOMKilled:
		return exitWith(res.ExitCode, errors.New("command was killed: out of memory (raise sandbox.limits.memory in the policy)"))
	case res.ExitCode != 0:
		return exitWith(res.ExitCode, nil)
	}
	return nil
}
