package docker

import (
	"context"
	"errors"
	"io"

	"github.com/agentbox/agentbox/images"
	"github.com/agentbox/agentbox/sandbox"
	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/build"
)

// The engine builds images its sandboxes run (a devcontainer's Dockerfile).
var _ sandbox.ImageBuilder = (*Runtime)(nil)

// errNoConnection: image builds need the engine connection Connect makes.
var errNoConnection = errors.New("this Docker runtime has no engine connection of its own (made by New, not Connect); connect with docker.Connect to build images")

// HasImage reports whether ref is on the engine.
func (d *Runtime) HasImage(ctx context.Context, ref string) (bool, error) {
	if d.cli == nil {
		return false, errNoConnection
	}
	if _, err := d.cli.ImageInspect(ctx, ref); err != nil {
		if cerrdefs.IsNotFound(err) {
			return false, nil
		}
		return false, err
	}
	return true, nil
}

// BuildImage builds b on the engine (intermediate containers removed, the
// engine's default build network), following its output to b.Progress.
func (d *Runtime) BuildImage(ctx context.Context, b sandbox.ImageBuild) error {
	if d.cli == nil {
		return errNoConnection
	}
	progress := b.Progress
	if progress == nil {
		progress = io.Discard
	}
	args := map[string]*string{}
	for k, v := range b.Args {
		args[k] = &v
	}
	resp, err := d.cli.ImageBuild(ctx, b.Context, build.ImageBuildOptions{
		Tags: []string{b.Tag}, Dockerfile: b.Dockerfile, BuildArgs: args, Target: b.Target,
		Remove: true, ForceRemove: true, NetworkMode: "default", Labels: b.Labels,
	})
	if err != nil {
		return err // the caller says which build could not start
	}
	defer resp.Body.Close()
	if err := images.FollowJSON(resp.Body, progress); err != nil {
		return &sandbox.BuildFailed{Err: err}
	}
	return nil
}
