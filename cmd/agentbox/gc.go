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
			copies, err := gcCopies(c)
			if err != nil {
				return exitWith(exitFailed, err)
			}
			return withRuntime(c, func(rt backend) error {
				removed, err := rt.GC(c.Context)
				for _, r := range removed {
					fmt.Fprintf(c.App.Writer, "removed %s: %s\n", shortID(r.ID), r.Reason)
				}
				if err == nil {
					fmt.Fprintln(c.App.Writer, gcSummary(len(removed), copies))
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

// gcSummary is gc's one closing line, whatever it removed.
func gcSummary(sandboxes, copies int) string {
	if sandboxes == 0 && copies == 0 {
		return "gc: nothing to remove"
	}
	return fmt.Sprintf("gc: removed %d engine object(s) (containers, volumes) and %d workspace copy or batch directory(ies)", sandboxes, copies)
}
