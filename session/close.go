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
// inside it come back, the change list is taken, session_end is written,
// the sandbox is removed, and a copy is finished (applied with
// Options.Apply, else left for review) unless the caller takes it. The
// error is a copy that could not be finished (workspace.ErrConflict,
// ErrIncomplete, ErrGuarded) or session_end that could not be written. A
// session that never wrote session_start writes nothing. Close is safe to
// call more than once.
func (s *Session) Close(ctx context.Context, end End) (Closed, error) {
	ctx = context.WithoutCancel(ctx)
	res := Closed{Files: []audit.FileChange{}, ExitCode: ExitCode(end.Status, end.Err)}
	if s.closed {
		return res, nil
	}
	s.closed = true
	sess := s.tools.Session
	if !s.recorded {
		if sess != nil && !s.external {
			_ = sess.Close(ctx)
		}
		s.discard()
		return res, nil
	}
	if sess != nil && s.beforeClose != nil {
		s.beforeClose(ctx, sess)
	}
	var stageErr error
	if sess != nil {
		// A workspace inside the sandbox comes back first, its refused
		// changes recorded as alarms.
		if res.PullErr = s.pullChanges(ctx); res.PullErr != nil {
			s.notice(res.PullErr.Error())
		}
		s.holdPulled(ctx, sess)
		if err := s.keptChanges(ctx); err != nil {
			stageErr = err
			s.notice(err.Error())
		}
		res.Files = s.changes(res.PullErr != nil)
	} else {
		s.discard()
	}
	if s.live != nil && sess != nil {
		files, err := s.stagedChanges(ctx)
		if err != nil {
			stageErr = err
			s.notice(err.Error())
		} else {
			res.Files = files
		}
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
	if sess != nil && !s.external {
		// Nothing may still run in a copy while it is finished.
		if err := sess.Close(ctx); errors.Is(err, sandbox.ErrPull) {
			if res.PullErr == nil {
				res.PullErr = err
			}
			if s.cp != nil {
				s.cp.MarkIncomplete("the sandbox's last changes could not be brought back")
			}
		} else if err != nil {
			res.CloseErr = fmt.Errorf("removing the sandbox %s: %w (agentbox gc removes it)", s.id, err)
		}
	}
	var err error
	if s.cp != nil && !s.o.TakeCopy && sess != nil {
		var files []audit.FileChange
		if files, err = s.finishCopy(); files != nil {
			res.Files = files
		}
		if err != nil {
			res.ExitCode = ExitFailed
		}
	}
	if err == nil && endErr != nil {
		err = fmt.Errorf("%w: %w", ErrAudit, endErr)
		if res.ExitCode == ExitOK {
			res.ExitCode = ExitFailed
		}
	}
	return res, err
}

// changes lists what the session changed: the copy's change set, or the
// difference between the snapshot begun at Open and the workspace now.
func (s *Session) changes(pulledShort bool) []audit.FileChange {
	out := []audit.FileChange{}
	switch {
	case s.cp != nil:
		ch, err := s.cp.Scan()
		if err != nil {
			s.notice("cannot list the changes of the workspace copy: " + err.Error())
			return out
		}
		out = ch
	case s.snap != nil:
		before, err := s.snap.Wait()
		if err != nil {
			s.notice("cannot snapshot the workspace; files changed will not be listed: " + err.Error())
			return out
		}
		after, err := workspace.Snapshot(s.o.Sandbox.Workspace)
		if err != nil {
			s.notice("cannot snapshot the workspace after the run: " + err.Error())
			return out
		}
		out = workspace.Diff(before, after)
	default:
		return out
	}
	if pulledShort {
		out = append(out, audit.IncompleteMarker("the sandbox's last changes could not be brought back"))
	}
	if out == nil {
		out = []audit.FileChange{}
	}
	return out
}

// finishCopy records the copy's changes once the sandbox is gone, then
// applies them (Options.Apply) or says how to review and apply them.
func (s *Session) finishCopy() ([]audit.FileChange, error) {
	cp := s.cp
	changes, err := cp.Finish()
	if err != nil {
		return nil, err
	}
	if cp.DiskFull {
		s.notice(fmt.Sprintf("the session filled its disk bound (%s, sandbox.limits.disk): writes past it failed inside the sandbox with ENOSPC", cp.DiskBound))
	}
	n := len(workspace.Counted(changes))
	if n == 0 {
		return changes, nil
	}
	if why := audit.Incomplete(changes); why != "" {
		s.notice(fmt.Sprintf("the change list of session %s is INCOMPLETE (%s): nothing can be applied from it; the copy stays in %s", cp.Session, why, cp.Root))
		return changes, fmt.Errorf("%w (%s)", workspace.ErrIncomplete, why)
	}
	if !s.o.Apply {
		s.notice(fmt.Sprintf("%d change(s) wait in session %s; the workspace is untouched.\n  review: agentbox changes %s\n  apply:  agentbox apply %s", n, cp.Session, cp.Session, cp.Session))
		return changes, nil
	}
	if err := cp.Apply(); err != nil {
		return changes, err
	}
	s.notice(fmt.Sprintf("applied %d change(s) to %s", n, cp.Workspace))
	return changes, nil
}
