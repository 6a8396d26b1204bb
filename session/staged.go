package session

import (
	"context"
	"fmt"
	"os"

	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/workspace"
)

// newLive makes the staged workspace of an rw session and points the
// configuration at it: the sandbox writes to an overlay, and each call's
// allowed changes are promoted into the workspace on the host (the
// session's after-call step). A staging layer that cannot be made refuses the
// session with the reason and the fix.
func (s *Session) newLive() error {
	store := s.o.Store
	if store.Dir == "" {
		var err error
		if store, err = workspace.DefaultStore(os.Getenv); err != nil {
			return err
		}
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
	l, err := workspace.NewLive(store, s.cfg.Workspace, o, stageDecider(s.o.Policy))
	if err != nil {
		return fmt.Errorf("%w (or set AGENTBOX_STAGING=off to let the sandbox write into the workspace directly, checked only from inside the sandbox)", err)
	}
	l.Configure(&s.cfg)
	s.live = l
	s.staged = l
	return nil
}

// stagedChanges closes the sandbox (nothing may run, kept background
// processes included, once the last changes are decided), promotes them,
// and lists every change promoted during the session.
func (s *Session) stagedChanges(ctx context.Context) ([]audit.FileChange, error) {
	if sess := s.tools.Session; sess != nil && !s.external {
		_ = sess.Close(ctx)
	}
	if _, err := s.finishStaged(); err != nil {
		return nil, fmt.Errorf("promoting the last changes: %w", err)
	}
	if s.live.DiskFull {
		s.notice(fmt.Sprintf("the session filled its disk bound (%s, sandbox.limits.disk): writes past it failed inside the sandbox with ENOSPC", s.live.DiskBound))
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

// keptChanges closes the sandbox of a copy-mode session on an overlay
// (nothing may run, kept background processes included, once the last
// changes are decided) and decides its last changes: held ones leave the
// copy, allowed ones stay for apply.
func (s *Session) keptChanges(ctx context.Context) error {
	if s.cp == nil || s.cp.Staging() == nil {
		return nil
	}
	if sess := s.tools.Session; sess != nil && !s.external {
		_ = sess.Close(ctx)
	}
	if _, err := s.finishKept(); err != nil {
		return err
	}
	cps, err := s.cp.Staging().Checkpoints()
	if err != nil {
		return err
	}
	held := 0
	for _, k := range cps {
		held += len(k.HeldChanges())
	}
	if held > 0 {
		s.notice(fmt.Sprintf("agentbox held %d change(s) the sandbox made (host hazards, files.write rules): they are not in the copy and will not be applied; review them with: agentbox changes %s --held", held, s.cp.Session))
	}
	return nil
}

// finishStaged promotes the last changes of a staged session once its
// sandbox is gone and records them (call id "end").
func (s *Session) finishStaged() (*workspace.Checkpoint, error) {
	cp, err := s.live.Finish("end")
	if err != nil {
		return nil, err
	}
	if cp != nil {
		err = s.recordCheckpoint(cp, "")
	}
	return cp, err
}

// finishKept decides the last changes of a copy-mode session (an overlay
// copy) once its sandbox is gone, and records them (call id "end").
func (s *Session) finishKept() (*workspace.Checkpoint, error) {
	cp, err := s.cp.DecideLast("end")
	if err == nil && cp != nil {
		err = s.recordCheckpoint(cp, "")
	}
	return cp, err
}
