package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/agentbox/agentbox/agent"
	"github.com/agentbox/agentbox/sandbox"
	"github.com/urfave/cli/v2"
	"golang.org/x/sys/unix"
)

// approvalsFile holds, per workspace (absolute path), the command prefixes
// the user answered "always" to at the approval prompt, each with when it
// was saved.
const approvalsFile = "approvals.json"

// savedApproval is one remembered prefix. Files written before prefixes
// had a time hold bare strings; those read with a zero Saved.
type savedApproval struct {
	Prefix string    `json:"prefix"`
	Saved  time.Time `json:"saved,omitzero"`
}

func (s *savedApproval) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		return json.Unmarshal(b, &s.Prefix)
	}
	type plain savedApproval
	return json.Unmarshal(b, (*plain)(s))
}

// fileApprovals is agent.ApprovalStore for one workspace, kept in the
// state directory.
type fileApprovals struct {
	path, workspace string
}

var _ agent.ApprovalStore = (*fileApprovals)(nil)

func (f *fileApprovals) read() map[string][]savedApproval {
	m := map[string][]savedApproval{}
	if b, err := os.ReadFile(f.path); err == nil {
		_ = json.Unmarshal(b, &m)
	}
	return m
}

// update changes the file under an exclusive lock (two sessions saving at
// once keep both answers).
func (f *fileApprovals) update(change func(m map[string][]savedApproval) error) error {
	if err := os.MkdirAll(filepath.Dir(f.path), 0o700); err != nil {
		return fmt.Errorf("saving approvals: %w", err)
	}
	lock, err := os.OpenFile(f.path+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return fmt.Errorf("saving approvals: %w", err)
	}
	defer lock.Close()
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil {
		return fmt.Errorf("saving approvals: locking %s: %w", lock.Name(), err)
	}
	m := f.read()
	if err := change(m); err != nil {
		return err
	}
	for k, v := range m {
		if len(v) == 0 {
			delete(m, k)
		}
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
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
func (f *fileApprovals) Prefixes() []string {
	var out []string
	for _, a := range f.read()[f.workspace] {
		out = append(out, a.Prefix)
	}
	return out
}

// Add remembers prefixes for this workspace.
func (f *fileApprovals) Add(prefixes []string) error {
	now := time.Now().UTC().Truncate(time.Second)
	return f.update(func(m map[string][]savedApproval) error {
		for _, p := range prefixes {
			if !slices.ContainsFunc(m[f.workspace], func(a savedApproval) bool { return a.Prefix == p }) {
				m[f.workspace] = append(m[f.workspace], savedApproval{Prefix: p, Saved: now})
			}
		}
		return nil
	})
}

// Where is the file and the workspace, as the prompt shows them.
func (f *fileApprovals) Where() string {
	return f.path + " for workspace " + f.workspace
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

func approvalsCommand() *cli.Command {
	wsFlag := &cli.StringFlag{Name: "workspace", Aliases: []string{"w"}, Usage: "the workspace (default: current directory)"}
	return &cli.Command{
		Name:  "approvals",
		Usage: `list or remove the commands answered "always" at the approval prompt, per workspace`,
		Description: approvalScopes + ". Only the \"always\" answers (scope workspace) are saved; " +
			"the session ones end with their session, once answers with their call.",
		Subcommands: []*cli.Command{
			{
				Name:   "list",
				Usage:  "list the saved command prefixes with when they were saved (--all: of every workspace)",
				Flags:  []cli.Flag{wsFlag, &cli.BoolFlag{Name: "all", Usage: "every workspace"}},
				Action: listApprovals,
			},
			{
				Name:      "remove",
				Usage:     "forget saved command prefixes of the workspace (--all: every one of it)",
				ArgsUsage: "PREFIX...",
				Flags:     []cli.Flag{wsFlag, &cli.BoolFlag{Name: "all", Usage: "all of this workspace's"}},
				Action:    removeApprovals,
			},
		},
	}
}

// listApprovals prints one line per saved prefix: workspace, rule, when
// saved (agent-made text escaped).
func listApprovals(c *cli.Context) error {
	st, err := approvalStore(c)
	if err != nil {
		return exitWith(exitUsage, err)
	}
	m := st.read()
	if !c.Bool("all") {
		m = map[string][]savedApproval{st.workspace: m[st.workspace]}
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	tw := tabwriter.NewWriter(c.App.Writer, 0, 4, 2, ' ', 0)
	n := 0
	for _, k := range keys {
		for _, a := range m[k] {
			if n == 0 {
				fmt.Fprintln(tw, "WORKSPACE\tRULE\tSAVED")
			}
			saved := "(before times were kept)"
			if !a.Saved.IsZero() {
				saved = a.Saved.Local().Format(time.DateTime)
			}
			fmt.Fprintf(tw, "%s\tcommand prefix `%s`\t%s\n", vis(k), vis(a.Prefix), saved)
			n++
		}
	}
	if err := tw.Flush(); err != nil {
		return exitWith(exitFailed, err)
	}
	if n == 0 {
		fmt.Fprintln(c.App.ErrWriter, "no saved approvals")
	}
	fmt.Fprintf(c.App.ErrWriter, "(saved in %s; remove with agentbox approvals remove PREFIX)\n", st.path)
	return nil
}

func removeApprovals(c *cli.Context) error {
	st, err := approvalStore(c)
	if err != nil {
		return exitWith(exitUsage, err)
	}
	if c.NArg() == 0 && !c.Bool("all") {
		return usageError{errors.New(`approvals remove needs a PREFIX (as listed: agentbox approvals list) or --all`)}
	}
	err = st.update(func(m map[string][]savedApproval) error {
		if c.Bool("all") {
			m[st.workspace] = nil
		}
		for _, p := range c.Args().Slice() {
			p = strings.Trim(p, "`")
			i := slices.IndexFunc(m[st.workspace], func(a savedApproval) bool { return a.Prefix == p })
			if i < 0 && !c.Bool("all") {
				return exitWith(exitFailed, fmt.Errorf("%q is not saved for %s (see agentbox approvals list)", p, st.workspace))
			}
			if i >= 0 {
				m[st.workspace] = slices.Delete(m[st.workspace], i, i+1)
			}
		}
		return nil
	})
	if err != nil {
		var ee *exitError
		if errors.As(err, &ee) {
			return err
		}
		return exitWith(exitFailed, err)
	}
	return nil
}

// rememberingApprover allows the workspace's saved commands and asks about
// the rest on a terminal (single keys), or denies them without one (fail
// closed: no terminal, no new allowance).
func rememberingApprover(c *cli.Context, tty bool) (agent.Approver, error) {
	st, err := approvalStore(c)
	if err != nil {
		return nil, exitWith(exitUsage, fmt.Errorf("approvals: %w", err))
	}
	if !tty {
		return agent.Remembered{Store: st, Next: agent.DenyAll{}}, nil
	}
	p := agent.NewPrompt(os.Stdin, os.Stderr)
	p.Store = st // the prompt consults it after this session's denials
	p.SingleKey = singleKey(int(os.Stdin.Fd()))
	return p, nil
}
