package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/agentbox/agentbox/batch"
	"github.com/agentbox/agentbox/devcontainer"
	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/sandbox"
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
	img, err := devcontainerImage(c, dc, os.Stderr)
	if err != nil {
		return nil, err
	}
	cmds, err := devcontainer.Apply(dc, img, p.Sandbox.User, cfg)
	if err != nil {
		return nil, exitWith(exitUsage, err)
	}
	return cmds, nil
}

// devcontainerImage is the devcontainer's image: its image, or the one
// the chosen backend builds from its Dockerfile (cached by the content
// hash of the build's inputs).
func devcontainerImage(c *cli.Context, dc *devcontainer.Config, progress io.Writer) (string, error) {
	if dc.Build == nil {
		return dc.Image, nil
	}
	var img string
	err := withImageBuilder(c, func(b sandbox.ImageBuilder) error {
		return withSlot(c.Context, progress, func() (err error) {
			img, err = devcontainer.Image(c.Context, b, dc, progress)
			return err
		})
	})
	return img, err
}

// buildBatchDevcontainers sets the image of every batch task that uses its
// workspace's devcontainer, building the Dockerfiles with the chosen
// backend (connected only when one has a Dockerfile).
func buildBatchDevcontainers(c *cli.Context, tasks []batch.Task, progress io.Writer) error {
	for _, t := range tasks {
		if t.Devcontainer != nil && t.Devcontainer.Build != nil {
			return withImageBuilder(c, func(b sandbox.ImageBuilder) error {
				return withSlot(c.Context, progress, func() error { return batch.BuildDevcontainers(c.Context, b, tasks, progress) })
			})
		}
	}
	return batch.BuildDevcontainers(c.Context, nil, tasks, progress)
}

// withImageBuilder connects to the chosen backend only to build images
// (sessions connect later, in withRuntime) and runs fn with its
// image-building power; a backend without it is refused, saying what to
// do instead.
func withImageBuilder(c *cli.Context, fn func(b sandbox.ImageBuilder) error) error {
	def, err := chosenBackend(c)
	if err != nil {
		return err
	}
	if !def.buildsImages {
		return exitWith(exitUsage, remoteBuildRefusal(def.caps.Backend))
	}
	rt, err := def.connect(c)
	if err != nil {
		return err
	}
	defer func() { _ = rt.Close(context.WithoutCancel(c.Context)) }()
	b, ok := rt.(sandbox.ImageBuilder)
	if !ok {
		return exitWith(exitUsage, remoteBuildRefusal(def.caps.Backend))
	}
	return fn(b)
}

// remoteBuildRefusal: a devcontainer Dockerfile is built by the local
// Docker engine, whose images a cluster's nodes cannot have (a backend
// whose Runtime is no sandbox.ImageBuilder).
func remoteBuildRefusal(backend string) error {
	return fmt.Errorf("--devcontainer with a Dockerfile on --backend %s: agentbox builds it with the local Docker engine, which the cluster's nodes cannot pull from; build the image yourself with agentbox's executor inside (add `COPY --from=%s /.agentbox/agentbox /.agentbox/agentbox` to the Dockerfile), push it where the nodes pull from (a local test cluster: K8S_IMAGES=\"IMAGE agentbox/k8s:latest\" make k8s-up imports it), and name it as devcontainer.json's image", backend, "agentbox/k8s:latest")
}
