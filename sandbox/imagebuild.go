package sandbox

import (
	"context"
	"io"
)

// ImageBuilder is a Runtime that builds images its own sandboxes can run
// (an optional power, like Capable: callers type-assert the Runtime). The
// Docker backend is one; a backend whose sandboxes run elsewhere than the
// images a local build makes (Kubernetes: the cluster's nodes) is not, and
// callers refuse a build on it, saying what to do instead.
type ImageBuilder interface {
	// HasImage reports whether ref is present where the sandboxes run.
	HasImage(ctx context.Context, ref string) (bool, error)
	// BuildImage builds b and tags it b.Tag. A build the engine ran and
	// one of whose steps failed returns a *BuildFailed; an error of any
	// other kind means the build could not be started.
	BuildImage(ctx context.Context, b ImageBuild) error
}

// ImageBuild is one image build from a Dockerfile.
type ImageBuild struct {
	Context    io.Reader         // the build context, a tar stream
	Dockerfile string            // the Dockerfile's path inside Context
	Tag        string            // the tag the image gets
	Args       map[string]string // build arguments
	Target     string            // the stage to build ("" = the last)
	Labels     map[string]string // labels the image carries
	Progress   io.Writer         // the build's output lines; nil = discarded
}

// BuildFailed is an image build the engine ran and one of whose steps
// failed; its message is the engine's.
type BuildFailed struct{ Err error }

func (e *BuildFailed) Error() string { return e.Err.Error() }

// Unwrap returns the engine's error.
func (e *BuildFailed) Unwrap() error { return e.Err }
