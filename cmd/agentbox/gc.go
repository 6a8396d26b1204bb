package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/agentbox/agentbox/sandbox"
	"github.com/urfave/cli/v2"
)

func gcCommand() *cli.Command {
	return &cli.Command{
		Name:  "gc",
		Usage: "remove your sandboxes whose owner process is proven gone (never a live one; unprovable ones only 24h past their session timeout), and applied, discarded or expired workspace copies; other users' orphans are counted and left (--all-owners, as root, removes them too)",
		Flags: append(backendFlags(), &cli.BoolFlag{Name: "all-owners", Usage: "as root: remove the orphaned sandboxes of every user on the host, not only yours (the same owner proof)"}),
		Action: func(c *cli.Context) error {
			all := c.Bool("all-owners")
			if all && os.Geteuid() != 0 {
				return exitWith(exitUsage, errors.New("gc --all-owners removes other users' sandboxes and needs root: run it as root, or without --all-owners to remove only yours"))
			}
			p := newGCProgress(c.App.ErrWriter)
			defer p.done()
			copies, err := gcCopies(c, p)
			if err != nil {
				return exitWith(exitFailed, err)
			}
			p.step("connecting to the sandbox backend")
			return withRuntime(c, func(rt backend) error {
				res, err := rt.GC(c.Context, sandbox.GCOptions{AllOwners: all, Progress: p.step})
				p.done()
				for _, r := range res.Removed {
					fmt.Fprintf(c.App.Writer, "removed %s: %s\n", shortID(r.ID), r.Reason)
				}
				if err == nil {
					fmt.Fprintln(c.App.Writer, gcSummary(len(res.Removed), copies, res.Others))
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

// gcSummary is gc's one closing line, whatever it removed: what went,
// and the orphans of other users it saw and left.
func gcSummary(sandboxes, copies, others int) string {
	s := "gc: nothing to remove"
	if sandboxes > 0 || copies > 0 {
		s = fmt.Sprintf("gc: removed %d engine object(s) (containers, volumes) and %d workspace copy or batch directory(ies)", sandboxes, copies)
	}
	if others > 0 {
		s += fmt.Sprintf("; left %d orphaned engine object(s) of other users (root: agentbox gc --all-owners removes them)", others)
	}
	return s
}
