package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/batch"
	"github.com/agentbox/agentbox/workspace"
	"github.com/urfave/cli/v2"
)

func copyStore() (workspace.Store, error) {
	s, err := workspace.DefaultStore(os.Getenv)
	if err != nil {
		return s, exitWith(exitUsage, err)
	}
	return s, nil
}

func changesCommand() *cli.Command {
	return &cli.Command{
		Name:      "changes",
		Usage:     "list sessions with pending changes, or show one session's changes (a unified diff whose control characters are shown escaped, \\x1b for ESC; the exact patch is written to changes.patch in the session's directory, $XDG_STATE_HOME/agentbox/work/SESSION)",
		ArgsUsage: "[SESSION]",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "stat", Usage: "list the changed files, not the diff"},
			&cli.BoolFlag{Name: "all", Usage: "list applied, discarded and empty sessions too"},
			&cli.BoolFlag{Name: "held", Usage: "list the changes held back from the workspace (rw) or from the copy (copy mode, batch, a copy pulled back from Kubernetes), with the rule"},
		},
		Action: func(c *cli.Context) error {
			store, err := copyStore()
			if err != nil {
				return err
			}
			if c.NArg() == 0 {
				return listCopies(c, store)
			}
			cp, err := store.Load(c.Args().First())
			if err != nil {
				return exitWith(exitUsage, err)
			}
			if cp.State == workspace.StateLive || cp.State == workspace.StateStaged || c.Bool("held") {
				return statStaged(c.App.Writer, cp, c.Bool("held"))
			}
			if c.Bool("stat") || cp.State != workspace.StatePending {
				return statCopy(c, cp)
			}
			return writePatch(c.App.Writer, c.App.ErrWriter, cp)
		},
	}
}

func listCopies(c *cli.Context, store workspace.Store) error {
	list, err := store.List()
	if err != nil {
		return exitWith(exitFailed, err)
	}
	tw := tabwriter.NewWriter(c.App.Writer, 0, 4, 2, ' ', 0)
	n := 0
	for _, m := range list {
		count, review := sessionCounts(store, m)
		if !review && !c.Bool("all") {
			continue
		}
		if n == 0 {
			fmt.Fprintln(tw, "SESSION\tSTATE\tCHANGES\tKIND\tCREATED\tWORKSPACE")
		}
		n++
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", vis(m.Session), m.State, count, m.Kind, m.Created.Local().Format(time.DateTime), vis(m.Workspace))
	}
	if n == 0 {
		fmt.Fprintln(c.App.Writer, "no pending changes and no rw sessions to review (--all lists every session kept)")
	}
	return tw.Flush()
}

// sessionCounts is a kept session's CHANGES column and whether it is
// there to review: a copy's changes (pending), what an rw session promoted
// and held (one running, or one that promoted or held something), and
// what either held back, from its checkpoints.
func sessionCounts(store workspace.Store, m workspace.Meta) (string, bool) {
	promoted, held, staged := stagedCounts(store, m.Session)
	if m.State == workspace.StateLive || m.State == workspace.StateStaged {
		return fmt.Sprintf("%d promoted, %d held", promoted, held), m.State == workspace.StateLive || promoted+held > 0
	}
	count := fmt.Sprint(len(workspace.Counted(m.Changes)))
	if audit.Incomplete(m.Changes) != "" {
		count += " (incomplete)"
	}
	if staged && held > 0 {
		count += fmt.Sprintf(" (%d held)", held)
	}
	return count, m.State == workspace.StatePending
}

// stagedCounts is how many changes a session's checkpoints promoted (an
// rw session) and held (rw, or a copy that staged); ok is false when it
// has none to read (a real copy).
func stagedCounts(store workspace.Store, session string) (promoted, held int, ok bool) {
	cp, err := store.Load(session)
	if err != nil {
		return 0, 0, false
	}
	cps, err := workspace.LoadCheckpoints(cp.StageDir())
	if err != nil {
		return 0, 0, false
	}
	for _, k := range cps {
		if !k.Kept {
			promoted += len(k.Promoted())
		}
		held += len(k.HeldChanges())
	}
	return promoted, held, true
}

func statCopy(c *cli.Context, cp *workspace.Copy) error {
	w := c.App.Writer
	fmt.Fprintf(w, "session %s (%s, %s) on %s: %s\n", vis(cp.Session), cp.State, cp.Kind, vis(cp.Workspace), plural(len(workspace.Counted(cp.Meta.Changes)), "change"))
	for _, ch := range cp.Meta.Changes {
		if ch.Change == workspace.ChangeIncomplete {
			fmt.Fprintf(w, "  INCOMPLETE %s\n", qpath(ch.Path))
			continue
		}
		fmt.Fprintf(w, "  %-8s %s (%d bytes)\n", ch.Change, qpath(ch.Path), ch.Bytes)
	}
	return nil
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

func applyCommand() *cli.Command {
	return &cli.Command{
		Name:      "apply",
		Usage:     "apply a session's pending changes to its workspace (nothing is applied if the workspace changed there meanwhile)",
		ArgsUsage: "SESSION",
		Action: func(c *cli.Context) error {
			cp, err := loadCopyArg(c)
			if err != nil {
				return err
			}
			n := len(workspace.Counted(cp.Meta.Changes))
			if err := cp.Apply(); err != nil {
				if errors.Is(err, workspace.ErrConflict) || errors.Is(err, workspace.ErrIncomplete) || errors.Is(err, workspace.ErrNotPending) {
					return exitWith(exitFailed, err)
				}
				return exitWith(exitFailed, fmt.Errorf("applying session %s: %w", cp.Session, err))
			}
			fmt.Fprintf(c.App.ErrWriter, "applied %s to %s\n", plural(n, "change"), cp.Workspace)
			return nil
		},
	}
}

func discardCommand() *cli.Command {
	return &cli.Command{
		Name:      "discard",
		Usage:     "remove a session's workspace copy and its pending changes",
		ArgsUsage: "SESSION",
		Action: func(c *cli.Context) error {
			cp, err := loadCopyArg(c)
			if err != nil {
				return err
			}
			store, _ := copyStore()
			if err := store.Discard(cp.Session); err != nil {
				return exitWith(exitFailed, err)
			}
			fmt.Fprintf(c.App.ErrWriter, "discarded the changes of session %s\n", cp.Session)
			return nil
		},
	}
}

func loadCopyArg(c *cli.Context) (*workspace.Copy, error) {
	if c.NArg() != 1 {
		return nil, usageError{fmt.Errorf("%s needs one SESSION (see agentbox changes)", c.Command.Name)}
	}
	store, err := copyStore()
	if err != nil {
		return nil, err
	}
	cp, err := store.Load(c.Args().First())
	if err != nil {
		return nil, exitWith(exitUsage, err)
	}
	return cp, nil
}

// gcCopies removes applied, discarded, empty and expired copies, saying
// what it waits on through p.
func gcCopies(c *cli.Context, p *gcProgress) (int, error) {
	store, err := copyStore()
	if err != nil {
		return 0, err
	}
	p.step("removing finished workspace copies")
	removed, err := store.GC(workspace.DefaultTTL, time.Now())
	p.pause()
	for _, s := range removed {
		fmt.Fprintf(c.App.Writer, "removed the workspace copy of session %s\n", s)
	}
	// Batches killed before they cleaned up: their copies, disk images
	// and mounts, once their process is proven gone.
	p.step("removing the work directories of dead batches")
	dirs, berr := batch.GCWork(filepath.Join(store.Dir, "batch"), time.Now())
	p.pause()
	for _, d := range dirs {
		fmt.Fprintf(c.App.Writer, "removed the work directory of dead batch %s\n", filepath.Base(d))
	}
	return len(removed) + len(dirs), errors.Join(err, berr)
}

// PatchFile is where `agentbox changes SESSION` writes the session's
// exact patch: in the session's directory of the store.
const PatchFile = "changes.patch"

// writePatch writes a copy's changes as a unified diff. File names are
// quoted the way git quotes them; the content's control characters are
// shown escaped whatever the output is (a terminal, a pipe into less -R,
// a file: workspace.ShowPatch), so that what the agent wrote cannot
// rewrite what the reviewer sees. The exact patch (git apply takes it)
// is written to changes.patch in the session's directory, and named on
// errw when something was escaped.
func writePatch(w, errw io.Writer, cp *workspace.Copy) error {
	var b strings.Builder
	if err := workspace.WritePatch(&b, cp.Workspace, cp.ChangedRoot(), cp.Meta.Changes); err != nil {
		return err
	}
	exact := filepath.Join(cp.Root, PatchFile)
	werr := writeNew(exact, b.String())
	shown, n := workspace.ShowPatch(b.String())
	if _, err := io.WriteString(w, shown); err != nil {
		return err
	}
	switch {
	case werr != nil:
		return exitWith(exitFailed, fmt.Errorf("writing the exact patch to %s: %w (the escaped one was printed; check the state directory's permissions)", exact, werr))
	case n > 0:
		fmt.Fprintf(errw, "%s escaped (shown as \\xNN or \\uNNNN); the exact patch, for git apply: %s\n", plural(n, "control character"), vis(exact))
	}
	return nil
}

// writeNew replaces the file at p with content through a new file renamed
// over it (a link at p is replaced, never followed).
func writeNew(p, content string) error {
	f, err := os.CreateTemp(filepath.Dir(p), "."+filepath.Base(p)+"-*")
	if err != nil {
		return err
	}
	_, err = f.WriteString(content)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), p)
	}
	if err != nil {
		return errors.Join(err, os.Remove(f.Name()))
	}
	return nil
}
