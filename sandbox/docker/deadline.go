package docker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentbox/agentbox/sandbox"
	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/docker/client"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// EngineTimeout bounds every engine call: a stalled engine must not hold
// agentbox past its call timeout.
var EngineTimeout = 30 * time.Second

// killTimeout bounds removing a sandbox whose channel broke: the call is
// already over its time.
const killTimeout = 10 * time.Second

// ErrNoAnswer is wrapped by the error of an engine call that got no answer
// within EngineTimeout (it also matches sandbox.ErrUnavailable).
var ErrNoAnswer = errors.New("no answer from the engine")

// deadlineEngine gives every call of the wrapped engine a deadline, and
// says so when it passes.
type deadlineEngine struct {
	Engine
	d time.Duration
}

var _ Engine = deadlineEngine{}

// withDeadlines wraps eng (once).
func withDeadlines(eng Engine) Engine {
	if _, ok := eng.(deadlineEngine); ok {
		return eng
	}
	return deadlineEngine{Engine: eng, d: EngineTimeout}
}

// call runs f under the deadline; a deadline that passed while the
// caller's own context is still live becomes ErrNoAnswer.
func call[T any](ctx context.Context, d time.Duration, op string, f func(context.Context) (T, error)) (T, error) {
	cctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	v, err := f(cctx)
	if err != nil && ctx.Err() == nil && cctx.Err() != nil {
		err = &noAnswerError{op: op, d: d, err: err}
	}
	return v, err
}

// noAnswerError is an engine call that timed out.
type noAnswerError struct {
	op  string
	d   time.Duration
	err error
}

func (e *noAnswerError) Error() string {
	return fmt.Sprintf("no answer from the engine in %s (%s)", e.d.Round(time.Second), e.op)
}

func (e *noAnswerError) Is(target error) bool {
	return target == ErrNoAnswer || target == sandbox.ErrUnavailable
}

func (e *noAnswerError) Unwrap() error { return e.err }

func (e deadlineEngine) Ping(ctx context.Context) (types.Ping, error) {
	return call(ctx, e.d, "ping", func(c context.Context) (types.Ping, error) { return e.Engine.Ping(c) })
}

func (e deadlineEngine) ImageInspect(ctx context.Context, ref string, opts ...client.ImageInspectOption) (image.InspectResponse, error) {
	return call(ctx, e.d, "inspecting the image", func(c context.Context) (image.InspectResponse, error) {
		return e.Engine.ImageInspect(c, ref, opts...)
	})
}

func (e deadlineEngine) ContainerCreate(ctx context.Context, cfg *container.Config, hc *container.HostConfig, nc *network.NetworkingConfig, p *ocispec.Platform, name string) (container.CreateResponse, error) {
	return call(ctx, e.d, "creating the container", func(c context.Context) (container.CreateResponse, error) {
		return e.Engine.ContainerCreate(c, cfg, hc, nc, p, name)
	})
}

// ContainerAttach bounds establishing the connection only: the stream
// itself lives as long as the session.
func (e deadlineEngine) ContainerAttach(ctx context.Context, id string, opts container.AttachOptions) (types.HijackedResponse, error) {
	return call(ctx, e.d, "attaching to the container", func(c context.Context) (types.HijackedResponse, error) {
		return e.Engine.ContainerAttach(c, id, opts)
	})
}

func (e deadlineEngine) ContainerStart(ctx context.Context, id string, opts container.StartOptions) error {
	_, err := call(ctx, e.d, "starting the container", func(c context.Context) (struct{}, error) {
		return struct{}{}, e.Engine.ContainerStart(c, id, opts)
	})
	return err
}

func (e deadlineEngine) ContainerInspect(ctx context.Context, id string) (container.InspectResponse, error) {
	return call(ctx, e.d, "inspecting the container", func(c context.Context) (container.InspectResponse, error) {
		return e.Engine.ContainerInspect(c, id)
	})
}

func (e deadlineEngine) ContainerRemove(ctx context.Context, id string, opts container.RemoveOptions) error {
	_, err := call(ctx, e.d, "removing the container", func(c context.Context) (struct{}, error) {
		return struct{}{}, e.Engine.ContainerRemove(c, id, opts)
	})
	return err
}

func (e deadlineEngine) ContainerList(ctx context.Context, opts container.ListOptions) ([]container.Summary, error) {
	return call(ctx, e.d, "listing containers", func(c context.Context) ([]container.Summary, error) {
		return e.Engine.ContainerList(c, opts)
	})
}

func (e deadlineEngine) VolumeList(ctx context.Context, opts volume.ListOptions) (volume.ListResponse, error) {
	return call(ctx, e.d, "listing volumes", func(c context.Context) (volume.ListResponse, error) {
		return e.Engine.VolumeList(c, opts)
	})
}

func (e deadlineEngine) VolumeRemove(ctx context.Context, id string, force bool) error {
	_, err := call(ctx, e.d, "removing a volume", func(c context.Context) (struct{}, error) {
		return struct{}{}, e.Engine.VolumeRemove(c, id, force)
	})
	return err
}

// ServerVersion passes the version endpoint through (engine detection:
// see detectQuirks), under the deadline; an engine without it answers as
// Docker.
func (e deadlineEngine) ServerVersion(ctx context.Context) (types.Version, error) {
	vr, ok := e.Engine.(versioner)
	if !ok {
		return types.Version{}, errNoVersion
	}
	return call(ctx, e.d, "reading the engine version", vr.ServerVersion)
}
