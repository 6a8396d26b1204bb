package session

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentbox/agentbox/agent"
	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/sandbox"
	"github.com/agentbox/agentbox/workspace"
)

// End is how a session ended, as its front-end saw it.
type End struct {
	Status string // agent.Status*
	Steps  int    // model calls (run), tool calls (mcp), 1 (exec)
	Answer string // the final answer, redacted
	Err    error  // why it did not end "ok" (nil: as Status says)
}

// Closed is what Close found.
type Closed struct {
	// Files the session changed (session_end's list; in copy mode, after
	// the sandbox is gone, the copy's final change set).
	Files []audit.FileChange
	// ExitCode is the one exit code of the session's status and error.
	ExitCode int
	// PullErr: the sandbox could not bring all its changes back (wraps
	// sandbox.ErrPull); the change list says incomplete. CloseErr: the
	// sandbox could not be removed.
	PullErr, CloseErr error
}

// Close ends the session: the changes of a sandbox whose workspace lives
// inside it come back, the sandbox is removed (the one place it is
// closed: nothing runs in it any more, kept background processes
// included, once the last changes are decided), the workspace finishes
// (the last changes decided, the change list taken), session_end is
// written, and a copy's changes are pended (applied with Options.Apply,
// else left for review) unless the caller takes them. The error is a copy
// that could not be finished (workspace.ErrConflict, ErrIncomplete,
// ErrGuarded) or session_end that could not be written. A session that
// never wrote session_start writes nothing and keeps nothing. Close is
// safe to call more than once.
func (s *Session) Close(ctx context.Context, end End) (Closed, error) {
	ctx = context.WithoutCancel(ctx)
	res := Closed{Files: []audit.FileChange{}, ExitCode: ExitCode(end.Status, end.Err)}
	if s.state >= stateClosing {
		return res, nil
	}
	s.state = stateClosing
	defer func() { s.state = stateClosed }()
	sess := s.tools.Session
	if !s.recorded {
		s.cleanup.releaseAll(ctx) // nothing ran: nothing is kept
		return res, nil
	}
	// A bulk call's promotion still going on finishes first: its records
	// come before the last ones.
	stageErr := s.settle()
	if stageErr != nil {
		s.notice(stageErr.Error())
	}
	if sess != nil && s.beforeClose != nil {
		s.beforeClose(ctx, sess)
	}
	if sess != nil {
		lost := ""
		// A workspace inside the sandbox comes back first, its refused
		// changes recorded as alarms.
		if res.PullErr = s.pullChanges(ctx); res.PullErr != nil {
			s.notice(res.PullErr.Error())
			lost = "the sandbox's last changes could not be brought back"
		}
		if err := s.cleanup.release(ctx, resSandbox); errors.Is(err, sandbox.ErrPull) {
			if res.PullErr == nil {
				res.PullErr = err
			}
			lost = "the sandbox's last changes could not be brought back"
		} else if err != nil {
			res.CloseErr = fmt.Errorf("removing the sandbox %s: %w (agentbox gc removes it)", s.id, err)
		}
		fin, err := s.ws.Finish(ctx, lost)
		if fin.Last != nil {
			if rerr := s.recordCheckpoint(fin.Last, ""); rerr != nil && err == nil {
				err = fmt.Errorf("recording the last changes: %w", rerr)
			}
		}
		for _, n := range fin.Notes {
			s.notice(n)
		}
		if err != nil {
			stageErr = errors.Join(stageErr, err)
			s.notice(err.Error())
		}
		res.Files = fin.Files
	} else {
		_ = s.cleanup.release(ctx, resWorkspace) // nothing ran in it
	}
	rec := &audit.Record{Event: audit.EventSessionEnd, Session: s.id, Status: end.Status, Steps: end.Steps,
		Answer: end.Answer, Files: res.Files}
	if end.Err != nil {
		rec.Error = s.redact(end.Err.Error())
	}
	if stageErr != nil {
		rec.Status, rec.Error = agent.StatusError, s.redact(stageErr.Error())
		res.ExitCode = ExitCode(agent.StatusError, stageErr)
	}
	endErr := s.tools.Audit.Append(rec)
	var err error
	if p, ok := s.ws.(workspace.Pender); ok && !s.o.TakeCopy && sess != nil {
		var fin workspace.Result
		fin, err = p.Pend(s.o.Apply)
		for _, n := range fin.Notes {
			s.notice(n)
		}
		if fin.Files != nil {
			res.Files = fin.Files
		}
		if err != nil {
			res.ExitCode = ExitFailed
		}
	}
	if s.o.TakeCopy {
		s.cleanup.forget(resWorkspace) // the caller takes the changes and removes the copy
	}
	s.cleanup.releaseAll(ctx)
	if err == nil && endErr != nil {
		err = fmt.Errorf("%w: %w", ErrAudit, endErr)
		if res.ExitCode == ExitOK {
			res.ExitCode = ExitFailed
		}
	}
	return res, err
}
