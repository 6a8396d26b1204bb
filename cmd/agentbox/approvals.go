package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"

	"github.com/agentbox/agentbox/agent"
	"github.com/agentbox/agentbox/sandbox"
	"github.com/urfave/cli/v2"
	"golang.org/x/sys/unix"
)

// approvalsFile holds, per workspace (absolute path), the command prefixes
// the user answered "always" to at the approval prompt.
const approvalsFile = "approvals.json"

// fileApprovals is agent.ApprovalStore for one workspace, kept in the
// state directory.
type fileApprovals struct {
	path, workspace string
}

var _ agent.ApprovalStore = (*fileApprovals)(nil)

func (f *fileApprovals) read() map[string][]string {
	m := map[string][]string{}
	if b, err := os.ReadFile(f.path); err == nil {
		_ = json.Unmarshal(b, &m)
	}
	return m
}

func (f *fileApprovals) write(m map[string][]string) error {
	for k, v := range m {
		if len(v) == 0 {
			delete(m, k)
		}
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(f.path), 0o700); err != nil {
		return fmt.Errorf("saving approvals: %w", err)
	}
	tmp := f.path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("saving approvals: %w", err)
	}
	if err := os.Rename(tmp, f.path); err != nil {
		return errors.Join(fmt.Errorf("saving approvals: %w", err), os.Remove(tmp))
	}
	return nil
}

// Prefixes are this workspace's remembered prefixes.
func (f *fileApprovals) Prefixes() []string { return f.read()[f.workspace] }

// Add remembers prefixes for this workspace.
func (f *fileApprovals) Add(prefixes []string) error {
	m := f.read()
	for _, p := range prefixes {
		if !slices.Contains(m[f.workspace], p) {
			m[f.workspace] = append(m[f.workspace], p)
		}
	}
	return f.write(m)
}

// approvalStore is the store of the command's workspace (--workspace, else
// the current directory).
func approvalStore(c *cli.Context) (*fileApprovals, error) {
	ws := c.String("workspace")
	if ws == "" {
		wd, err := os.Getwd()
		if err != nil {
			return nil, err
		}
		ws = wd
	}
	abs, err := sandbox.ResolveWorkspace(ws)
	if err != nil {
		return nil, err
	}
	state, err := trustStorePath() // the same state directory
	if err != nil {
		return nil, err
	}
	return &fileApprovals{path: filepath.Join(filepath.Dir(state), approvalsFile), workspace: abs}, nil
}

// singleKey puts the terminal on fd into reading single keys without echo
// (signals still work: Ctrl-C interrupts) and returns how to restore it.
func singleKey(fd int) func() (restore func()) {
	return func() func() {
		old, err := unix.IoctlGetTermios(fd, unix.TCGETS)
		if err != nil {
			return func() {}
		}
		raw := *old
		raw.Lflag &^= unix.ICANON | unix.ECHO
		raw.Cc[unix.VMIN], raw.Cc[unix.VTIME] = 1, 0
		if unix.IoctlSetTermios(fd, unix.TCSETS, &raw) != nil {
			return func() {}
		}
		return func() { _ = unix.IoctlSetTermios(fd, unix.TCSETS, old) }
	}
}

func approvalsCommand() *cli.Command {
	wsFlag := &cli.StringFlag{Name: "workspace", Aliases: []string{"w"}, Usage: "the workspace (default: current directory)"}
	return &cli.Command{
		Name:  "approvals",
		Usage: `list or remove the commands answered "always" at the approval prompt, per workspace`,
		Subcommands: []*cli.Command{
			{
				Name:  "list",
				Usage: "list the remembered command prefixes (--all: of every workspace)",
				Flags: []cli.Flag{wsFlag, &cli.BoolFlag{Name: "all", Usage: "every workspace"}},
				Action: func(c *cli.Context) error {
					st, err := approvalStore(c)
					if err != nil {
						return exitWith(exitUsage, err)
					}
					m := st.read()
					if !c.Bool("all") {
						m = map[string][]string{st.workspace: m[st.workspace]}
					}
					keys := make([]string, 0, len(m))
					for k := range m {
						keys = append(keys, k)
					}
					sort.Strings(keys)
					n := 0
					for _, k := range keys {
						for _, p := range m[k] {
							fmt.Fprintf(c.App.Writer, "%s\t%s\n", k, p)
							n++
						}
					}
					if n == 0 {
						fmt.Fprintln(c.App.ErrWriter, "no remembered approvals")
					}
					return nil
				},
			},
			{
				Name:      "remove",
				Usage:     "forget remembered command prefixes of the workspace (--all: every one of it)",
				ArgsUsage: "PREFIX...",
				Flags:     []cli.Flag{wsFlag, &cli.BoolFlag{Name: "all", Usage: "all of this workspace's"}},
				Action: func(c *cli.Context) error {
					st, err := approvalStore(c)
					if err != nil {
						return exitWith(exitUsage, err)
					}
					if c.NArg() == 0 && !c.Bool("all") {
						return usageError{errors.New(`approvals remove needs a PREFIX (as listed: agentbox approvals list) or --all`)}
					}
					m := st.read()
					have := m[st.workspace]
					if c.Bool("all") {
						m[st.workspace] = nil
					}
					for _, p := range c.Args().Slice() {
						if !slices.Contains(have, p) {
							return exitWith(exitFailed, fmt.Errorf("%q is not remembered for %s (see agentbox approvals list)", p, st.workspace))
						}
						m[st.workspace] = slices.DeleteFunc(m[st.workspace], func(s string) bool { return s == p })
					}
					return st.write(m)
				},
			},
		},
	}
}

// rememberingApprover allows the workspace's remembered commands and asks
// about the rest on a terminal (single keys), or denies them without one.
func rememberingApprover(c *cli.Context, tty bool) (agent.Approver, error) {
	st, err := approvalStore(c)
	if err != nil {
		return nil, exitWith(exitUsage, fmt.Errorf("approvals: %w", err))
	}
	if !tty {
		return agent.Remembered{Store: st, Next: agent.DenyAll{}}, nil
	}
	p := agent.NewPrompt(os.Stdin, os.Stderr)
	p.Store = st
	p.SingleKey = singleKey(int(os.Stdin.Fd()))
	return agent.Remembered{Store: st, Next: p}, nil
}
