package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentbox/agentbox/sandbox"
	"github.com/urfave/cli/v2"
)

// sandboxFlags are the flags of every command that starts a sandbox.
func sandboxFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "workspace", Aliases: []string{"w"}, Usage: "directory mounted at /workspace (default: current directory)"},
		&cli.StringFlag{Name: "image", Usage: "sandbox image (default: the policy's sandbox.image)"},
		&cli.StringFlag{Name: "network", Usage: "none | open (default: the policy's sandbox.network)"},
		&cli.StringFlag{Name: "executor", Usage: "static agentbox binary mounted as the executor (default: this binary)", Hidden: true, EnvVars: []string{"AGENTBOX_EXECUTOR"}},
	}
}

// sandboxConfig builds the session configuration from flags.
func sandboxConfig(c *cli.Context) (sandbox.Config, error) {
	ws := c.String("workspace")
	if ws == "" {
		wd, err := os.Getwd()
		if err != nil {
			return sandbox.Config{}, fmt.Errorf("%w: current directory: %v", sandbox.ErrConfig, err)
		}
		ws = wd
	}
	abs, err := filepath.Abs(ws)
	if err != nil {
		return sandbox.Config{}, fmt.Errorf("%w: workspace %s: %v", sandbox.ErrConfig, ws, err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return sandbox.Config{}, fmt.Errorf("%w: workspace %s does not exist; create it or pass --workspace DIR", sandbox.ErrConfig, ws)
	}
	if !fi.IsDir() {
		return sandbox.Config{}, fmt.Errorf("%w: workspace %s is not a directory; pass --workspace DIR", sandbox.ErrConfig, ws)
	}
	cfg := sandbox.Config{
		Image:         "agentbox/base:latest",
		Workspace:     abs,
		WorkspaceMode: "rw",
		Network:       "none",
		ExecutorPath:  c.String("executor"),
		Env:           map[string]string{},
	}
	if v := c.String("image"); v != "" {
		cfg.Image = v
	}
	if v := c.String("network"); v != "" {
		if v != "none" && v != "open" {
			return cfg, usageError{fmt.Errorf("--network %q: want none or open", v)}
		}
		cfg.Network = v
	}
	return cfg, nil
}
