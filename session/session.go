package session

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/user"

	"github.com/agentbox/agentbox/agent"
	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/sandbox"
	"github.com/agentbox/agentbox/workspace"
)

// ErrAudit: the audit log refused a record; nothing runs unrecorded.
var ErrAudit = errors.New("audit log")

// Options describe one session.
type Options struct {
	Policy *policy.Policy
	// Sandbox is the session configuration the policy's sandbox settings
	// describe (agent.SandboxConfig) with the caller's overrides;
	// Workspace is the user's directory.
	Sandbox sandbox.Config
	// Mode is the workspace mode asked for ("" = the policy's
	// sandbox.workspace); ModeExplicit says the user named it (a flag),
	// which a backend that cannot honour it refuses instead of adapting.
	Mode         sandbox.WorkspaceMode
	ModeExplicit bool
	// Learn makes this a learning run (`run --learn`): it works on a copy
	// (a mode named explicitly must be copy), calls the policy asks about
	// or denies run, recorded as would_ask/would_deny (agent.Tools.Learn),
	// and session_start says learn: true. Hardening is unchanged.
	Learn    bool
	Audit    agent.RedactingLog
	Approver agent.Approver // the up-front asks (nil: nobody can be asked)
	// ExecApprove answers exec-time asks; nil: the pipeline's (Approver,
	// each answer recorded).
	ExecApprove func(context.Context, sandbox.ExecAsk) bool
	ID          string // "" = a new id

	// Copies: Store ("" Dir = the default store), a real copy instead of
	// an overlay, and the largest workspace a real copy takes.
	Store        workspace.Store
	NoOverlay    bool
	MaxCopyBytes int64
	// DiskBound, when set, says where a copy's writes are bounded instead
	// of by the copy itself ("" = where the backend's capabilities say).
	DiskBound string
	// Apply: a copy's changes are applied to the workspace at Close
	// (unless it changed meanwhile); else they wait for review.
	Apply bool
	// TakeCopy: the caller takes a copy's changes itself (batch exports
	// them): Close neither finishes nor applies the copy, and the caller
	// calls RemoveCopy.
	TakeCopy bool
	// NoStaging: an rw session on a backend that can stage lets the
	// sandbox write into the workspace directly (AGENTBOX_STAGING=off)
	// instead of promoting each call's changes on the host.
	NoStaging bool
	// Lazy: Open does not start the sandbox; Start does (while the first
	// model request is in flight, at the first MCP call, or after exec's
	// up-front decision).
	Lazy bool

	Record Record
	// Setup are commands Exec runs first in the same sandbox, each an
	// ordinary tool call (a devcontainer's lifecycle commands); the first
	// that fails stops the rest and the command. (Run takes them in
	// agent.RunConfig.Setup.)
	Setup []string
	// SetupEvents is told about each setup command Exec runs (the CLI's
	// printer); nil = nothing.
	SetupEvents agent.SetupEvents
	// Notice receives what the user should know (the copy, a fallback,
	// pending changes); nil = nowhere.
	Notice func(string)
}

// Record is what session_start says besides the sandbox.
type Record struct {
	Task, TaskID, Model      string
	PolicyPath, PolicySHA256 string // "" = the policy's
	Version, User, Host      string // User, Host "" = this process's
}

// Session is one session: its pipeline, sandbox and workspace.
type Session struct {
	o     Options
	rt    sandbox.Runtime
	caps  sandbox.Capabilities
	id    string
	mode  sandbox.WorkspaceMode // recorded: rw, ro or copy
	cfg   sandbox.Config        // what the sandbox starts with
	tools *agent.Tools
	// ws is the workspace the session works on, in its shape; its
	// lifecycle (workspace.Workspace) is driven by Start, AfterCall and
	// Close.
	ws    workspace.Workspace
	start func(context.Context) (sandbox.Session, error) // Wrap: the caller's
	// external: the sandbox is the caller's (Wrap): Close leaves it.
	external bool

	beforeClose func(ctx context.Context, sess sandbox.Session)

	state    state
	cleanup  cleanups // what the session acquired, released in one place each
	recorded bool     // session_start written

	// bg is a bulk call's promotion finishing while the model thinks;
	// late the settled one that held more than the model was told with
	// its call, for the next call's result.
	bg, late *deferredCall
}

// Open prepares a session on rt: it decides the workspace mode from the
// backend's capabilities, prepares the workspace (a copy or overlay in copy
// mode; a snapshot begun in the background in rw), assembles the tool
// pipeline and fills the enforcement once, and, unless o.Lazy, starts the
// sandbox. session_start is written by Start. On an error nothing is left
// behind.
func Open(ctx context.Context, rt sandbox.Runtime, o Options) (*Session, error) {
	if rt == nil || o.Policy == nil || o.Audit == nil {
		return nil, errors.New("session.Open: a runtime, Policy and Audit are required")
	}
	s := &Session{o: o, rt: rt, caps: sandbox.CapabilitiesOf(rt), cfg: o.Sandbox}
	want := o.Mode
	if want == "" {
		want = o.Policy.Sandbox.Workspace
	}
	if !want.Valid() && want != "" {
		return nil, fmt.Errorf("%w: workspace mode %q: want rw, ro or copy", sandbox.ErrConfig, want)
	}
	if o.Learn {
		if o.ModeExplicit && want != sandbox.WorkspaceCopy {
			return nil, fmt.Errorf("%w: a learning run works on a copy; drop the workspace mode %q or ask for copy", sandbox.ErrConfig, want)
		}
		want = sandbox.WorkspaceCopy
	}
	mode, err := s.caps.Mode(want, o.ModeExplicit)
	if err != nil {
		return nil, err
	}
	if mode != want {
		s.notice(fmt.Sprintf("the %s backend does not mount the workspace: working on a copy of it; its changes come back for review (agentbox changes / apply)", s.caps.Backend))
	}
	s.mode = mode
	s.cfg.WorkspaceMode = mode
	if mode == sandbox.WorkspaceCopy {
		s.cfg.WorkspaceMode = sandbox.WorkspaceRW // on the copy
	}
	s.id = o.ID
	if s.id == "" {
		s.id = o.Sandbox.SessionID
	}
	if s.id == "" {
		s.id = sandbox.NewID()
	}
	s.cfg.SessionID = s.id
	if s.cfg.Network == sandbox.NetworkProxy && s.cfg.Egress == nil {
		if s.cfg, err = agent.WithEgress(ctx, s.cfg, o.Policy, o.Audit); err != nil {
			return nil, err
		}
	}
	s.tools, err = agent.NewTools(o.Policy, &s.cfg, o.Audit, o.Approver)
	if err != nil {
		return nil, err
	}
	if o.ExecApprove != nil {
		s.cfg.Enforce.Approve = o.ExecApprove
	}
	s.tools.SessionID = s.id
	s.tools.Learn = o.Learn
	s.tools.WorkspaceMode = s.cfg.WorkspaceMode
	s.tools.Hook = s
	switch {
	case mode == sandbox.WorkspaceCopy:
		if err := s.newCopy(s.caps.Workspace.Overlays() && !o.NoOverlay); err != nil {
			return nil, err
		}
	case mode == sandbox.WorkspaceRW && s.caps.Workspace.Overlays() && !o.NoStaging && s.cfg.Workspace != "":
		if err := s.newStaged(); err != nil {
			return nil, err
		}
	default:
		s.setWorkspace(workspace.NewInPlace(s.cfg.Workspace, mode))
	}
	if !o.Lazy {
		if _, err := s.StartSandbox(ctx); err != nil {
			s.cleanup.releaseAll(context.WithoutCancel(ctx)) // nothing ran: nothing is kept
			return nil, err
		}
	}
	return s, nil
}

// Wrap is a session around a tool pipeline assembled elsewhere (tests and
// embedders that bring their own agent.Tools): its sandbox is
// tools.Session, or started by start (nil when tools.Session is set), and
// stays the caller's to close. The workspace o.Sandbox.Workspace is
// snapshotted unless o.Mode is ro.
func Wrap(tools *agent.Tools, start func(context.Context) (sandbox.Session, error), o Options) *Session {
	s := &Session{o: o, tools: tools, start: start, cfg: o.Sandbox, mode: o.Mode, external: true}
	if s.mode == "" {
		s.mode = sandbox.WorkspaceRW
	}
	s.id = tools.SessionID
	if s.id == "" && tools.Session != nil {
		s.id = tools.Session.ID()
	}
	if s.id == "" {
		s.id = sandbox.NewID()
		tools.SessionID = s.id
	}
	if tools.Hook == nil {
		tools.Hook = s
	}
	s.setWorkspace(workspace.NewInPlace(o.Sandbox.Workspace, s.mode))
	if tools.Session != nil {
		s.state = stateStarted
		s.begin()
	}
	return s
}

// ID is the session id (audit log, container label, copy).
func (s *Session) ID() string { return s.id }

// Mode is the workspace mode the session runs in (rw, ro or copy).
func (s *Session) Mode() sandbox.WorkspaceMode { return s.mode }

// Learn reports whether this is a learning run (Options.Learn).
func (s *Session) Learn() bool { return s.o.Learn }

// Config is the configuration the sandbox starts (or started) with.
func (s *Session) Config() sandbox.Config { return s.cfg }

// Capabilities are the backend's.
func (s *Session) Capabilities() sandbox.Capabilities { return s.caps }

// Tools is the session's tool pipeline: every call of run, exec, mcp and
// batch goes through it. Calls must not overlap.
func (s *Session) Tools() *agent.Tools { return s.tools }

// Workspace is the workspace the session works on, in its shape.
func (s *Session) Workspace() workspace.Workspace { return s.ws }

// Copy is the session's workspace copy (nil outside copy mode).
func (s *Session) Copy() *workspace.Copy {
	if c, ok := s.ws.(*workspace.Copied); ok {
		return c.Copy()
	}
	return nil
}

// Sandbox is the running sandbox (nil before Start).
func (s *Session) Sandbox() sandbox.Session { return s.tools.Session }

// Recorded reports whether session_start was written (the sandbox
// started, or exec recorded a command denied up front).
func (s *Session) Recorded() bool { return s.recorded }

// Describe sets what session_start says of the task and the model, for a
// session whose task is known only once a client speaks (mcp).
func (s *Session) Describe(task, model string) {
	s.o.Record.Task, s.o.Record.Model = task, model
}

// BeforeClose sets fn to run on the sandbox once the session ended, just
// before the sandbox is removed (batch reads its cgroup's figures).
func (s *Session) BeforeClose(fn func(ctx context.Context, sess sandbox.Session)) {
	s.beforeClose = fn
}

// RemoveCopy removes the workspace copy (TakeCopy: once the caller took
// the changes).
func (s *Session) RemoveCopy() {
	if cp := s.Copy(); cp != nil {
		_ = cp.Remove()
	}
}

func (s *Session) redact(text string) string {
	if s.tools.Redact != nil {
		return s.tools.Redact(text)
	}
	return text
}

func (s *Session) notice(msg string) {
	if s.o.Notice != nil {
		s.o.Notice(msg)
	}
}

// setWorkspace makes ws the session's workspace, its release registered
// as it is acquired.
func (s *Session) setWorkspace(ws workspace.Workspace) {
	s.ws = ws
	s.cleanup.add(resWorkspace, func(context.Context) error { return ws.Close() })
}

// newCopy makes the session's copy (copy mode) and points the
// configuration at it: an overlay (whose changes are decided after every
// call, the allowed ones kept for apply) where overlay is true and the
// host can mount one, else a real copy (pulled back over the channel
// where the backend carries the workspace into the sandbox).
func (s *Session) newCopy(overlay bool) error {
	store, err := s.store()
	if err != nil {
		return err
	}
	co := workspace.CopyOptions{Session: s.id, DiskBytes: s.o.Policy.Sandbox.DiskBytes, DiskRequired: s.o.Policy.Sandbox.DiskSet,
		NoOverlay: !overlay, MaxCopyBytes: s.o.MaxCopyBytes, BoundInSandbox: s.caps.DiskBound,
		Decide: stageDecider(s.o.Policy)}
	if s.o.DiskBound != "" {
		co.BoundInSandbox = s.o.DiskBound
	}
	if !s.caps.Workspace.Overlays() {
		co.NoOverlayWhy = "the " + s.caps.Backend + " backend sends the copy into the sandbox"
	}
	ws, err := workspace.NewCopied(store, s.o.Sandbox.Workspace, co, s.caps.Workspace.Channel())
	if err != nil {
		return err
	}
	s.setWorkspace(ws)
	ws.Plan().Configure(&s.cfg)
	return nil
}

// store is the copies' store: the caller's, or the default one.
func (s *Session) store() (workspace.Store, error) {
	if s.o.Store.Dir != "" {
		return s.o.Store, nil
	}
	return workspace.DefaultStore(os.Getenv)
}

// begin tells a workspace the sandbox changes in place that the sandbox
// is about to start: its snapshot is taken in the background, overlapping
// the start, and is complete before session_start.
func (s *Session) begin() {
	if w, ok := s.ws.(workspace.Watcher); ok {
		w.Begin()
	}
}

func currentUser() string {
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return ""
}
