package batch

import (
	"context"
	"fmt"
	"io"

	"github.com/agentbox/agentbox/devcontainer"
	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/sandbox"
)

// BuildDevcontainers sets the Image of every task that uses its
// workspace's devcontainer (devcontainer: true): the image it names, or
// the one b builds from its Dockerfile, once per devcontainer.json
// (cached by the content hash of the build's inputs). b is the runtime's
// image-building power (sandbox.ImageBuilder); it may be nil when no
// devcontainer has a Dockerfile.
func BuildDevcontainers(ctx context.Context, b sandbox.ImageBuilder, tasks []Task, progress io.Writer) error {
	built := map[string]string{}
	for i := range tasks {
		t := &tasks[i]
		dc := t.Devcontainer
		switch {
		case dc == nil:
			continue
		case dc.Build == nil:
			t.Image = dc.Image
			continue
		}
		if img, ok := built[dc.Path]; ok {
			t.Image = img
			continue
		}
		if b == nil {
			return fmt.Errorf("%w: task %s: %s builds a Dockerfile, which needs the Docker engine; use the docker backend or name an image", sandbox.ErrConfig, t.ID, dc.Path)
		}
		img, err := devcontainer.Image(ctx, b, dc, progress)
		if err != nil {
			return fmt.Errorf("task %s: %w", t.ID, err)
		}
		built[dc.Path], t.Image = img, img
	}
	return nil
}

// TaskSandbox is the sandbox configuration of task t under policy p: the
// policy's, the batch's overrides, then the task's devcontainer (image,
// containerEnv, user), whose lifecycle commands it returns: they run as
// the task's first tool calls. Nothing of the devcontainer loosens the
// policy (devcontainer.Apply).
func TaskSandbox(p *policy.Policy, o Overrides, t *Task) (sandbox.Config, []string, error) {
	cfg := SandboxConfig(p, o, t.Workspace)
	if t.Devcontainer == nil {
		return cfg, nil, nil
	}
	if o.Image != "" {
		return cfg, nil, fmt.Errorf("%w: task %s: devcontainer: true and --image both name the image; use one", sandbox.ErrConfig, t.ID)
	}
	cmds, err := devcontainer.Apply(t.Devcontainer, t.Image, p.Sandbox.User, &cfg)
	if err != nil {
		return cfg, nil, fmt.Errorf("%w: task %s: %w", sandbox.ErrConfig, t.ID, err)
	}
	return cfg, cmds, nil
}
