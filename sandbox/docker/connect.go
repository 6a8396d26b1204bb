package docker

import (
	"context"
	"errors"

	"github.com/agentbox/agentbox/sandbox"

	"github.com/docker/docker/client"
)

// Connect connects to the engine named by the environment (see NewClient)
// and returns a Runtime that owns the connection: Close removes every
// container it started and closes the connection.
func Connect(ctx context.Context) (*Runtime, error) {
	cli, err := NewClient(ctx)
	if err != nil {
		return nil, err
	}
	rt := New(cli)
	rt.cli = cli
	return rt, nil
}

// Client is the engine connection of a Runtime made by Connect (nil for
// one made by New): image builds and diagnostics need more of the API than
// Engine.
func (d *Runtime) Client() *client.Client { return d.cli }

// GC removes this engine's sandboxes whose owner is proven dead, or that
// are far past the age bound (see GC).
func (d *Runtime) GC(ctx context.Context, o sandbox.GCOptions) (sandbox.GCResult, error) {
	return GC(ctx, d.eng, o)
}

// Close removes every container this runtime started that is still open
// and closes a connection made by Connect.
func (d *Runtime) Close(ctx context.Context) error {
	err := d.CloseAll(ctx)
	if d.cli != nil {
		err = errors.Join(err, d.cli.Close())
	}
	return err
}
