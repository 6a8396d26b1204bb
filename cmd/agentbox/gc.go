package main

import (
	"fmt"

	"github.com/urfave/cli/v2"
)

func gcCommand() *cli.Command {
	return &cli.Command{
		Name:  "gc",
		Usage: "remove sandboxes whose owner process is proven gone (never a live one; unprovable ones only 24h past their session timeout), and applied, discarded or expired workspace copies",
		Flags: backendFlags(),
		Action: func(c *cli.Context) error {
			if err := gcCopies(c); err != nil {
				return exitWith(exitFailed, err)
			}
			return withRuntime(c, func(rt backend) error {
				removed, err := rt.GC(c.Context)
				for _, r := range removed {
					fmt.Fprintf(c.App.Writer, "removed %s: %s\n", shortID(r.ID), r.Reason)
				}
				if len(removed) == 0 && err == nil {
					fmt.Fprintln(c.App.Writer, "nothing to remove")
				}
				return err
			})
		},
	}
}

// shortID shortens a container id; a pod's name stays whole.
func shortID(id string) string {
	if len(id) == 64 {
		return id[:12]
	}
	return id
}
