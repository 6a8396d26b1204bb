package main

import (
	"fmt"

	"github.com/agentbox/agentbox/sandbox/docker"
	"github.com/docker/docker/client"
	"github.com/urfave/cli/v2"
)

func gcCommand() *cli.Command {
	return &cli.Command{
		Name:  "gc",
		Usage: "remove sandboxes whose owner process is gone (never anyone else's)",
		Action: func(c *cli.Context) error {
			return withRuntime(c.Context, func(cl *client.Client, _ *docker.Runtime) error {
				removed, err := docker.GC(c.Context, cl)
				for _, id := range removed {
					fmt.Fprintf(c.App.Writer, "removed %s\n", id[:12])
				}
				if len(removed) == 0 && err == nil {
					fmt.Fprintln(c.App.Writer, "nothing to remove")
				}
				return err
			})
		},
	}
}
