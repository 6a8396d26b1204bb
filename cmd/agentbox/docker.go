package main

import (
	"context"

	"github.com/agentbox/agentbox/sandbox"
	"github.com/agentbox/agentbox/sandbox/docker"
)

// backend is what the CLI needs of a sandbox backend: sessions through
// sandbox.Runtime, and removal of sandboxes whose owner is gone.
type backend interface {
	sandbox.Runtime
	GC(ctx context.Context) ([]sandbox.Removed, error)
}

var _ backend = (*docker.Runtime)(nil)

// withRuntime connects to the backend, runs fn with it and guarantees that
// every sandbox it started is removed when fn returns, on an error, or on
// SIGINT/SIGTERM. The Docker Engine API is the only backend today.
func withRuntime(ctx context.Context, fn func(rt backend) error) error {
	rt, err := docker.Connect(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = rt.Close(context.WithoutCancel(ctx)) }()
	return fn(rt)
}
