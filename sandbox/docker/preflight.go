package docker

import (
	"context"
	"fmt"

	"github.com/agentbox/agentbox/sandbox"
	cerrdefs "github.com/containerd/errdefs"
)

// CheckImage reports whether image is on the engine, with Start's errors
// (sandbox.ErrImageMissing, sandbox.ErrUnavailable), so that a batch can
// check every task's image before it starts any.
func (d *Runtime) CheckImage(ctx context.Context, image string) error {
	image = sandbox.ImageRef(image)
	if _, err := d.eng.ImageInspect(ctx, image); err != nil {
		if cerrdefs.IsNotFound(err) {
			return fmt.Errorf("%w: image %s is not on this engine; build it with `%s` (or `make image`)", sandbox.ErrImageMissing, image, sandbox.ImageBuildHint(image))
		}
		return fmt.Errorf("%w: inspecting image %s: %w", sandbox.ErrUnavailable, image, err)
	}
	return nil
}
