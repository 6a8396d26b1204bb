package main

import (
	"context"
	"fmt"
	"os"

	"github.com/agentbox/agentbox/devcontainer"
	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/sandbox"
	"github.com/agentbox/agentbox/sandbox/docker"
	"github.com/urfave/cli/v2"
)

func devcontainerFlag() cli.Flag {
	return &cli.BoolFlag{Name: "devcontainer", Usage: "use the workspace's .devcontainer/devcontainer.json (image or Dockerfile, containerEnv, numeric remoteUser, lifecycle commands as tool calls); fields that would loosen the sandbox are refused"}
}

// applyDevcontainer reads the workspace's devcontainer.json into cfg (the
// image, built when it is a Dockerfile; containerEnv; the user) and returns
// its lifecycle commands, which run as ordinary tool calls. Nothing in it
// loosens the policy: the hardening, network and file rules stay the
// policy's.
func applyDevcontainer(c *cli.Context, p *policy.Policy, cfg *sandbox.Config) ([]string, error) {
	if !c.Bool("devcontainer") {
		return nil, nil
	}
	if c.String("image") != "" {
		return nil, usageError{fmt.Errorf("--devcontainer and --image both name the image; use one")}
	}
	dc, err := devcontainer.Load(cfg.Workspace)
	if err != nil {
		return nil, exitWith(exitUsage, err)
	}
	reserved := map[string]bool{}
	for k := range sandbox.ProxyEnv() {
		reserved[k] = true
	}
	for k := range sandbox.TrustEnv() {
		reserved[k] = true
	}
	for k, v := range dc.Env {
		if reserved[k] {
			return nil, exitWith(exitUsage, fmt.Errorf("%s: %w: containerEnv.%s: agentbox sets it", dc.Path, devcontainer.ErrRefused, k))
		}
		if _, set := cfg.Env[k]; set {
			return nil, exitWith(exitUsage, fmt.Errorf("%s: %w: containerEnv.%s: the policy's sandbox.env passes it too; keep one", dc.Path, devcontainer.ErrRefused, k))
		}
		if cfg.Env == nil {
			cfg.Env = map[string]string{}
		}
		cfg.Env[k] = v
	}
	if dc.User != "" {
		if p.Sandbox.User != "" && p.Sandbox.User != dc.User {
			return nil, exitWith(exitUsage, fmt.Errorf("%s: %w: remoteUser/containerUser %s: the policy sets sandbox.user %s", dc.Path, devcontainer.ErrRefused, dc.User, p.Sandbox.User))
		}
		cfg.User = dc.User
	}
	if dc.Build == nil {
		cfg.Image = dc.Image
	} else {
		rt, err := docker.Connect(c.Context)
		if err != nil {
			return nil, err
		}
		defer rt.Close(context.WithoutCancel(c.Context))
		img, err := devcontainer.Image(c.Context, rt.Client(), dc, os.Stderr)
		if err != nil {
			return nil, exitWith(exitUnavailable, err)
		}
		cfg.Image = img
	}
	var cmds []string
	for _, cmd := range dc.Commands {
		cmds = append(cmds, cmd.Script)
	}
	return cmds, nil
}
