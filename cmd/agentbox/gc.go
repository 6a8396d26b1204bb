package main

import (
	"fmt"

	"github.com/urfave/cli/v2"
)

func gcCommand() *cli.Command {
	return &cli.Command{
		Name:  "gc",
		Usage: "remove sandboxes whose owner process is gone (never anyone else's), and applied, discarded or expired workspace copies",
		Action: func(c *cli.Context) error {
			if err := gcCopies(c); err != nil {
				return exitWith(exitFailed, err)
			}
			return withRuntime(c.Context, func(rt backend) error {
				removed, err := rt.GC(c.Context)
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
