package session

import (
	"context"
	"fmt"
	"os"

	"github.com/agentbox/agentbox/agent"
	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/workspace"
)

// newLive makes the staged workspace of an rw session and points the
// configuration at it: the sandbox writes to an overlay, and each call's
// allowed changes are promoted into the workspace on the host (the
// pipeline's Staged step). A staging layer that cannot be made refuses the
// session with the reason and the fix.
func (s *Session) newLive() error {
	store := s.o.Store
	if store.Dir == "" {
		var err error
		if store, err = workspace.DefaultStore(os.Getenv); err != nil {
			return err
		}
	}
	// No disk image under the upper layer: rw writes end up in the
	// workspace's filesystem anyway, and held changes move to the
	// session's records by rename.
	o := workspace.CopyOptions{Session: s.id, NoOverlay: s.o.NoOverlay}
	l, err := workspace.NewLive(store, s.cfg.Workspace, o, agent.StageDecider(s.o.Policy))
	if err != nil {
		return fmt.Errorf("%w (or set AGENTBOX_STAGING=off to let the sandbox write into the workspace directly, checked only from inside the sandbox)", err)
	}
	l.Configure(&s.cfg)
	s.live = l
	s.tools.Staged = l
	return nil
}

// stagedChanges closes the sandbox (nothing may run, kept background
// processes included, once the last changes are decided), promotes them,
// and lists every change promoted during the session.
func (s *Session) stagedChanges(ctx context.Context) ([]audit.FileChange, error) {
	if sess := s.tools.Session; sess != nil && !s.external {
		_ = sess.Close(ctx)
	}
	if _, err := s.tools.FinishStaged(s.live); err != nil {
		return nil, fmt.Errorf("promoting the last changes: %w", err)
	}
	out, held, err := s.live.Stage.PromotedFiles()
	if err != nil {
		return nil, err
	}
	if held > 0 {
		s.notice(fmt.Sprintf("agentbox held %d change(s) the sandbox made (host hazards, files.write rules, conflicts): they are not in the workspace; review them with: agentbox changes %s --held", held, s.live.Session))
	}
	return out, nil
}
