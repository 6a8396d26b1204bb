package session

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentbox/agentbox/sandbox"
	"github.com/agentbox/agentbox/workspace"
)

// holdPulled decides the changes of a sandbox that holds its own copy of
// the workspace (Kubernetes: the pod's copy is the staging layer) once
// they are all back: the sandbox is closed first (its last pull; nothing
// runs in it any more, kept processes included), then every change in the
// host-side copy goes through the decisions of promotion (files.write and
// the host hazards). Held changes leave the copy, are kept for review
// (agentbox changes SESSION --held) and recorded as alarms. A copy whose
// changes cannot be decided is marked incomplete: nothing is applied.
func (s *Session) holdPulled(ctx context.Context, sess sandbox.Session) {
	if s.cp == nil || !s.caps.CopyOverChannel || s.cp.Kind == workspace.KindOverlay {
		return
	}
	if !s.external {
		if err := sess.Close(ctx); errors.Is(err, sandbox.ErrPull) {
			s.cp.MarkIncomplete("the sandbox's last changes could not be brought back")
		}
	}
	cp, err := s.cp.HoldPulled("end", stageDecider(s.o.Policy))
	if err != nil {
		s.cp.MarkIncomplete("its changes could not be decided")
		s.notice(err.Error())
		return
	}
	if cp == nil {
		return
	}
	if err := s.recordCheckpoint(cp, ""); err != nil {
		s.notice(fmt.Sprintf("recording the held changes: %v", err))
	}
	s.notice(fmt.Sprintf("agentbox held %d change(s) the sandbox made (host hazards, files.write rules): they are not in the copy and will not be applied; review them with: agentbox changes %s --held", len(cp.Changes), s.cp.Session))
}
