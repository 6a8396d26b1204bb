package main

import (
	"context"

	"github.com/agentbox/agentbox/sandbox"
	"github.com/docker/docker/client"
)

// withRuntime connects to the engine, runs fn with a Docker runtime and
// guarantees that every container the runtime started is removed when fn
// returns, on an error, or on SIGINT/SIGTERM.
func withRuntime(ctx context.Context, fn func(cli *client.Client, rt *sandbox.Docker) error) error {
	cli, err := sandbox.NewClient(ctx)
	if err != nil {
		return err
	}
	defer cli.Close()
	rt := sandbox.NewDocker(cli)
	defer func() { _ = rt.CloseAll(context.WithoutCancel(ctx)) }()
	return fn(cli, rt)
}
