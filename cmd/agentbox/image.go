package main

import (
	"context"
	"fmt"
	"os"

	"github.com/agentbox/agentbox"
	"github.com/agentbox/agentbox/images"
	"github.com/agentbox/agentbox/sandbox"
	"github.com/agentbox/agentbox/sandbox/docker"
	"github.com/agentbox/agentbox/sandbox/wire"
	"github.com/urfave/cli/v2"
)

func imageCommand() *cli.Command {
	return &cli.Command{
		Name:  "image",
		Usage: "manage sandbox images",
		Subcommands: []*cli.Command{{
			Name:      "build",
			Usage:     "build a sandbox image from the Dockerfiles embedded in agentbox (bootstraps the Debian base offline if it cannot be pulled)",
			ArgsUsage: "[NAME]",
			Flags: []cli.Flag{
				&cli.BoolFlag{Name: "no-pull", Usage: "do not try to pull the base image; bootstrap it if missing"},
				&cli.StringFlag{Name: "mirror", Usage: "Debian mirror for the bootstrap", EnvVars: []string{"AGENTBOX_DEBIAN_MIRROR"}},
				&cli.BoolFlag{Name: "executor", Usage: "build " + images.ExecutorImage + " (for --backend kubernetes): the base image with this static agentbox binary inside"},
			},
			Action: func(c *cli.Context) error {
				name := "base"
				if c.NArg() > 1 {
					return usageError{fmt.Errorf("image build takes at most one NAME")}
				}
				if c.NArg() == 1 {
					name = c.Args().First()
				}
				rt, err := docker.Connect(c.Context)
				if err != nil {
					return err
				}
				defer rt.Close(context.WithoutCancel(c.Context))
				opts := images.Options{Progress: os.Stderr, Mirror: c.String("mirror"), Pull: !c.Bool("no-pull")}
				if c.Bool("executor") {
					if c.NArg() > 0 {
						return usageError{fmt.Errorf("image build --executor takes no NAME")}
					}
					exe, err := sandbox.ExecutorBinary("")
					if err != nil {
						return exitWith(exitUnavailable, err)
					}
					labels := map[string]string{"org.agentbox.version": agentbox.Version, "org.agentbox.protocol": wire.Protocol}
					id, err := images.BuildExecutor(c.Context, rt.Client(), exe, labels, opts)
					if err != nil {
						return exitWith(exitUnavailable, err)
					}
					fmt.Fprintf(c.App.Writer, "built %s (%s, executor protocol %s); import it into the cluster's nodes (a local test cluster: make k8s-up)\n", images.ExecutorImage, id, wire.Protocol)
					return nil
				}
				id, err := images.Build(c.Context, rt.Client(), name, opts)
				if err != nil {
					return exitWith(exitUnavailable, err)
				}
				fmt.Fprintf(c.App.Writer, "built %s (%s)\n", images.Tag(name), id)
				return nil
			},
		}},
	}
}
