package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/agentbox/agentbox/agent"
	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/sandbox"
	"github.com/agentbox/agentbox/workspace"
)

// stagingOff: the user asked for the old direct rw mount (no staging
// layer): AGENTBOX_STAGING=off. Said in the start header.
func stagingOff() bool { return os.Getenv("AGENTBOX_STAGING") == "off" }

// newLive makes the staged workspace of an rw session and points cfg at
// it: the sandbox writes to an overlay, and each call's allowed changes
// are promoted into the workspace on the host. A staging layer that
// cannot be made refuses the run with the reason and the fix.
func newLive(p *policy.Policy, cfg *sandbox.Config) (*workspace.Live, error) {
	store, err := workspace.DefaultStore(os.Getenv)
	if err != nil {
		return nil, err
	}
	if cfg.SessionID == "" {
		cfg.SessionID = sandbox.NewID()
	}
	// No disk image under the upper layer: rw writes end up in the
	// workspace's filesystem anyway (README: Disk), and held changes move
	// to the session's records by rename.
	o := workspace.CopyOptions{Session: cfg.SessionID, NoOverlay: os.Getenv("AGENTBOX_OVERLAY") == "off"}
	l, err := workspace.NewLive(store, cfg.Workspace, o, agent.StageDecider(p))
	if err != nil {
		return nil, fmt.Errorf("%w (or set AGENTBOX_STAGING=off to let the sandbox write into the workspace directly, checked only from inside the sandbox)", err)
	}
	l.Configure(cfg)
	return l, nil
}

// liveChanges is a staged run's change lister (agent.RunConfig.Changes):
// it closes the sandbox (nothing may run, kept background processes
// included, once the last changes are decided), promotes them, and lists
// every change promoted during the session.
func liveChanges(ctx context.Context, tools *agent.Tools, l *workspace.Live, w io.Writer) func() ([]audit.FileChange, error) {
	return func() ([]audit.FileChange, error) {
		if tools.Session != nil {
			_ = tools.Session.Close(context.WithoutCancel(ctx))
		}
		if _, err := tools.FinishStaged(l); err != nil {
			return nil, err
		}
		return stagedSummary(l.Stage, l.Session, w)
	}
}

// stagedSummary lists the changes promoted during a staged session and
// says on w how many were held.
func stagedSummary(st *workspace.Stage, session string, w io.Writer) ([]audit.FileChange, error) {
	out, held, err := st.PromotedFiles()
	if err != nil {
		return nil, err
	}
	if held > 0 && w != nil {
		fmt.Fprintf(w, "agentbox held %d change(s) the sandbox made (host hazards, files.write rules, conflicts): they are not in the workspace; review them with: agentbox changes %s --held\n", held, session)
	}
	return out, nil
}
