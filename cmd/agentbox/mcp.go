package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/agentbox/agentbox"
	"github.com/agentbox/agentbox/agent"
	"github.com/agentbox/agentbox/mcp"
	"github.com/agentbox/agentbox/sandbox"
	"github.com/urfave/cli/v2"
)

func mcpCommand() *cli.Command {
	return &cli.Command{
		Name:  "mcp",
		Usage: "serve the sandboxed tools (execute_bash, read_file, write_file) over MCP on stdio",
		Description: "Any MCP client (Claude Desktop, Claude Code, Cursor, Codex CLI, ...) runs `agentbox mcp` as a stdio server:\n" +
			"one sandbox per connection, every call under the policy and in the audit log. stdout carries the protocol only.",
		Flags: append(sandboxFlags(),
			devcontainerFlag(),
			&cli.StringFlag{Name: "approve", Usage: "answer to the policy's ask when the client cannot ask the user (no elicitation): deny or allow (default: deny)"},
			&cli.StringFlag{Name: "metrics-addr", Usage: "serve Prometheus text metrics at http://ADDR/metrics while the server runs (calls, denials, alarms, held changes, sandboxes, slot waits; e.g. 127.0.0.1:9465; port 0 picks one, printed on stderr)"},
			&cli.StringFlag{Name: "start", Value: string(mcp.StartOnInitialize), Usage: "when the sandbox starts: initialize (in the background as soon as the client connects: the first call finds it running) or first-call (no container for a client that never calls a tool)"},
		),
		Action: func(c *cli.Context) error {
			if c.Args().Len() > 0 {
				return usageError{fmt.Errorf("mcp takes no arguments (got %q)", c.Args().First())}
			}
			var fallback agent.Approver
			switch c.String("approve") {
			case "":
			case "deny":
				fallback = mcp.Fallback(false)
			case "allow":
				fallback = mcp.Fallback(true)
			default:
				return usageError{fmt.Errorf("--approve %q: want deny or allow (the client asks the user when it supports elicitation)", c.String("approve"))}
			}
			start := mcp.StartAt(c.String("start"))
			if !start.Valid() {
				return usageError{fmt.Errorf("--start %q: want %s or %s", start, mcp.StartOnInitialize, mcp.StartOnFirstCall)}
			}
			p, err := loadPolicy(c)
			if err != nil {
				return err
			}
			cfg, err := sandboxConfig(c, p)
			if err != nil {
				return err
			}
			setup, err := applyDevcontainer(c, p, &cfg)
			if err != nil {
				return err
			}
			log, err := openAudit(c, p, cfg.Workspace)
			if err != nil {
				return err
			}
			defer log.Close()
			if cfg, err = agent.WithEgress(c.Context, cfg, p, log); err != nil { // network: proxy
				return exitWith(exitUsage, err)
			}
			in, out, err := mcpStdio(c)
			if err != nil {
				return err
			}
			return withCappedRuntime(c, func(rt *cappedRuntime) error {
				_, _ = rt.GC(c.Context, sandbox.GCOptions{})
				var audited agent.RedactingLog = log
				if addr := c.String("metrics-addr"); addr != "" {
					m := &sessionMetrics{RedactingLog: log, rt: rt}
					stop, err := m.serve(addr, c.App.ErrWriter)
					if err != nil {
						return err
					}
					defer stop()
					audited = m
				}
				return mcp.Serve(c.Context, mcp.Config{
					Policy: p, Sandbox: cfg, Runtime: rt, Audit: audited, Fallback: fallback, Start: start,
					Version: agentbox.Version, In: in, Out: out,
					Notice: func(msg string) { fmt.Fprintln(c.App.ErrWriter, msg) }, NoStaging: stagingOff(), Setup: setup,
				})
			})
		},
	}
}

// mcpStdio is the protocol's stream: the process's stdin and stdout, the
// latter reserved for the protocol alone.
func mcpStdio(c *cli.Context) (io.ReadCloser, io.WriteCloser, error) {
	in, ok := c.App.Reader.(io.ReadCloser)
	if !ok {
		in = io.NopCloser(c.App.Reader)
	}
	if c.App.Writer != os.Stdout {
		w, ok := c.App.Writer.(io.WriteCloser)
		if !ok {
			return nil, nil, errors.New("mcp: the output stream cannot be closed")
		}
		return in, w, nil
	}
	out, err := mcp.ClaimStdout()
	if err != nil {
		return nil, nil, err
	}
	return in, out, nil
}
