package session

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/sandbox"
	"github.com/agentbox/agentbox/workspace"
)

// Start starts the sandbox unless it runs already and writes
// session_start, once. It is what agent.RunConfig.Start calls while the
// first model request is in flight. If session_start cannot be written
// the sandbox is closed and the error wraps ErrAudit.
func (s *Session) Start(ctx context.Context) (sandbox.Session, error) {
	sess, err := s.StartSandbox(ctx)
	if err != nil {
		return nil, err
	}
	if s.recorded {
		return sess, nil
	}
	if err := s.recordStart(sess); err != nil {
		_ = s.cleanup.release(context.WithoutCancel(ctx), resSandbox)
		s.tools.Session = nil
		s.state = stateCreated
		return nil, err
	}
	return sess, nil
}

// StartSandbox starts the sandbox once, without recording session_start
// (a warm pool starts sandboxes ahead of their tasks; Start records). An
// overlay the engine cannot mount falls back to a real copy.
func (s *Session) StartSandbox(ctx context.Context) (sandbox.Session, error) {
	if s.state >= stateClosing {
		return nil, fmt.Errorf("session %s is %s: start a new session", s.id, s.state)
	}
	if s.tools.Session != nil {
		return s.tools.Session, nil
	}
	s.begin()
	var sess sandbox.Session
	var err error
	switch {
	case s.start != nil:
		sess, err = s.start(ctx)
	case s.rt != nil:
		sess, err = s.rt.Start(ctx, s.cfg)
		if err != nil && s.ws.Shape() == workspace.ShapeOverlayCopy && isMountError(err) {
			s.notice(fmt.Sprintf("the engine could not mount the overlay (%v); falling back to a real copy", err))
			_ = s.cleanup.release(ctx, resWorkspace)
			if err := s.newCopy(false); err != nil {
				return nil, err
			}
			s.notice(s.ws.Describe())
			sess, err = s.rt.Start(ctx, s.cfg)
		}
	default:
		return nil, fmt.Errorf("session %s has no sandbox to start", s.id)
	}
	if err != nil {
		return nil, err
	}
	s.tools.Session = sess
	s.state = stateStarted
	if !s.external {
		s.cleanup.add(resSandbox, func(ctx context.Context) error { return sess.Close(ctx) })
	}
	return sess, nil
}

// isMountError: the engine could not mount the workspace volume.
func isMountError(err error) bool {
	return strings.Contains(err.Error(), "mount local volume") || strings.Contains(err.Error(), "overlay")
}

// recordStart writes session_start; sess is nil when nothing started (an
// exec the policy denied up front). The workspace snapshot begun at Open
// is complete first: the sandbox's start changes no file.
func (s *Session) recordStart(sess sandbox.Session) error {
	r := s.o.Record
	if r.PolicyPath == "" && s.o.Policy != nil {
		r.PolicyPath, r.PolicySHA256 = s.o.Policy.Source(), s.o.Policy.SHA256
	}
	if r.User == "" {
		r.User = currentUser()
	}
	if r.Host == "" {
		r.Host, _ = os.Hostname()
	}
	if w, ok := s.ws.(workspace.Watcher); ok {
		_ = w.Ready() // an error is said at Close, where the change list is taken
	}
	rec := &audit.Record{Event: audit.EventSessionStart, Session: s.id, Task: r.Task, TaskID: r.TaskID,
		PolicyPath: r.PolicyPath, PolicySHA256: r.PolicySHA256, Workspace: s.o.Sandbox.Workspace,
		WorkspaceMode: string(s.mode), Model: r.Model, Version: r.Version, User: r.User, Host: r.Host}
	if s.o.Learn {
		rec.Learn = audit.Ptr(true)
	}
	if sess != nil {
		info := sess.Info()
		rec.Image, rec.ImageID, rec.ContainerID = info.Image, info.ImageID, info.ContainerID
	}
	if err := s.tools.Audit.Append(rec); err != nil {
		return fmt.Errorf("%w: %w; nothing runs without an audit record", ErrAudit, err)
	}
	s.recorded = true
	return nil
}
