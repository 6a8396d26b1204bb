package main

import (
	"context"

	"github.com/agentbox/agentbox/sandbox/docker"
	"github.com/docker/docker/client"
)

// withRuntime connects to the engine, runs fn with a Docker runtime and
// guarantees that every container the runtime started is removed when fn
// returns, on an error, or on SIGINT/SIGTERM.
func withRuntime(ctx context.Context, fn func(cli *client.Client, rt *docker.Runtime) error) error {
	cli, err := docker.NewClient(ctx)
	if err != nil {
		return err
	}
	defer cli.Close()
	rt := docker.New(cli)
	defer func() { _ = rt.CloseAll(context.WithoutCancel(ctx)) }()
	return fn(cli, rt)
}
