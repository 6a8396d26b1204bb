package session

import (
	"fmt"

	"github.com/agentbox/agentbox/workspace"
)

// newStaged makes the staged workspace of an rw session and points the
// configuration at it: the sandbox writes to an overlay, and each call's
// allowed changes are promoted into the workspace on the host (the
// session's after-call step). A staging layer that cannot be made refuses the
// session with the reason and the fix.
func (s *Session) newStaged() error {
	store, err := s.store()
	if err != nil {
		return err
	}
	// When the policy sets sandbox.limits.disk, the upper layer sits on a
	// size-bounded filesystem: everything the session writes stays there
	// (promoted files too), so a runaway writer fills the bound, not the
	// host's disk; a bound that cannot be enforced fails closed. Without
	// it rw is not bounded: the image is mounted in agentbox's mount
	// namespace, and an engine in another one (a private mount namespace,
	// a second daemon) would stage into an empty directory instead.
	o := workspace.CopyOptions{Session: s.id, NoOverlay: s.o.NoOverlay}
	if s.o.Policy.Sandbox.DiskSet {
		o.DiskBytes, o.DiskRequired = s.o.Policy.Sandbox.DiskBytes, true
	}
	ws, err := workspace.NewStaged(store, s.cfg.Workspace, o, stageDecider(s.o.Policy))
	if err != nil {
		return fmt.Errorf("%w (or set AGENTBOX_STAGING=off to let the sandbox write into the workspace directly, checked only from inside the sandbox)", err)
	}
	s.setWorkspace(ws)
	ws.Plan().Configure(&s.cfg)
	return nil
}
