package main

import (
	"fmt"
	"os"

	"github.com/agentbox/agentbox/agent"
	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/sandbox"
	"github.com/urfave/cli/v2"
)

// sandboxFlags are the flags of every command that starts a sandbox.
func sandboxFlags() []cli.Flag {
	return append(append(backendFlags(), otlpFlags()...),
		policyFlag(),
		&cli.StringFlag{Name: "audit", Usage: "audit log (default: $XDG_STATE_HOME/agentbox/audit.jsonl; never inside the workspace)", EnvVars: []string{"AGENTBOX_AUDIT"}},
		&cli.StringFlag{Name: "audit-key-file", Usage: "HMAC key file for the audit log (else $AGENTBOX_AUDIT_KEY)"},
		&cli.StringFlag{Name: "workspace", Aliases: []string{"w"}, Usage: "directory mounted at /workspace (default: current directory)"},
		&cli.StringFlag{Name: "image", Usage: "sandbox image (default: the policy's sandbox.image)"},
		&cli.StringFlag{Name: "network", Usage: "none | proxy | open (default: the policy's sandbox.network; proxy: only the hosts network.allow names, through the audited proxy)"},
		&cli.StringFlag{Name: "executor", Usage: "static agentbox binary mounted as the executor (default: this binary)", Hidden: true, EnvVars: []string{"AGENTBOX_EXECUTOR"}},
	)
}

// sandboxConfig builds the session configuration from the policy's sandbox
// settings, overridden by flags.
func sandboxConfig(c *cli.Context, p *policy.Policy) (sandbox.Config, error) {
	ws := c.String("workspace")
	if ws == "" {
		wd, err := os.Getwd()
		if err != nil {
			return sandbox.Config{}, fmt.Errorf("%w: current directory: %w", sandbox.ErrConfig, err)
		}
		ws = wd
	}
	abs, err := sandbox.ResolveWorkspace(ws)
	if err != nil {
		return sandbox.Config{}, err
	}
	cfg := agent.SandboxConfig(p, abs)
	cfg.ExecutorPath = c.String("executor")
	if v := c.String("image"); v != "" {
		cfg.Image = v
	}
	if v := c.String("network"); v != "" {
		m, err := sandbox.ParseNetworkMode(v)
		if err != nil {
			return cfg, usageError{fmt.Errorf("--network: %w", err)}
		}
		cfg.Network = m
	}
	return cfg, nil
}
