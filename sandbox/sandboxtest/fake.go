package sandboxtest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"

	"github.com/agentbox/agentbox/sandbox"
)

// FakeRuntime is a sandbox.Runtime for tests of the layers above the
// backends (session, agent): its sessions run no command and start no
// container. Exec answers with Answer (nil: exit 0, no output); files are
// read from and written to the session's Config.Workspace on the host,
// below it only. It declares Caps (zero: a backend that mounts host paths).
type FakeRuntime struct {
	Caps   sandbox.Capabilities
	Answer func(command string) sandbox.ExecResult

	mu      sync.Mutex
	Started []sandbox.Config // every configuration a session started with
}

var (
	_ sandbox.Runtime = (*FakeRuntime)(nil)
	_ sandbox.Capable = (*FakeRuntime)(nil)
)

// Capabilities implements sandbox.Capable.
func (f *FakeRuntime) Capabilities() sandbox.Capabilities {
	if f.Caps.Backend == "" {
		return sandbox.Capabilities{Backend: "fake", Workspace: sandbox.WorkspaceMount, User: sandbox.UserHost}
	}
	return f.Caps
}

// Start records cfg and returns a fake session on it.
func (f *FakeRuntime) Start(ctx context.Context, cfg sandbox.Config) (sandbox.Session, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if cfg.SessionID == "" {
		cfg.SessionID = sandbox.NewID()
	}
	f.mu.Lock()
	f.Started = append(f.Started, cfg)
	f.mu.Unlock()
	return &fakeSession{rt: f, cfg: cfg}, nil
}

type fakeSession struct {
	rt     *FakeRuntime
	cfg    sandbox.Config
	mu     sync.Mutex
	closed bool
}

func (s *fakeSession) ID() string { return s.cfg.SessionID }

func (s *fakeSession) Info() sandbox.Info {
	return sandbox.Info{SessionID: s.cfg.SessionID, ContainerID: "fake-" + s.cfg.SessionID[:12], Image: s.cfg.Image, ImageID: "sha256:fake"}
}

func (s *fakeSession) check() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return sandbox.ErrClosed
	}
	return nil
}

func (s *fakeSession) Exec(ctx context.Context, req sandbox.ExecRequest) (sandbox.ExecResult, error) {
	if err := s.check(); err != nil {
		return sandbox.ExecResult{}, err
	}
	res := sandbox.ExecResult{}
	if s.rt.Answer != nil {
		res = s.rt.Answer(req.Command)
	}
	sum := sha256.Sum256(res.Output)
	res.OutputBytes, res.OutputSHA = int64(len(res.Output)), hex.EncodeToString(sum[:])
	return res, nil
}

// host is the host path of a workspace path, never outside the workspace.
func (s *fakeSession) host(p string) (string, string, error) {
	rel := path.Clean("/" + strings.TrimPrefix(p, sandbox.WorkspaceDir))
	if rel == "/" {
		return "", "", &sandbox.FileError{Msg: p + " is the workspace itself"}
	}
	return filepath.Join(s.cfg.Workspace, filepath.FromSlash(rel)), rel[1:], nil
}

func (s *fakeSession) ReadFile(ctx context.Context, req sandbox.ReadRequest) (sandbox.ReadResult, error) {
	if err := s.check(); err != nil {
		return sandbox.ReadResult{}, err
	}
	h, rel, err := s.host(req.Path)
	if err != nil {
		return sandbox.ReadResult{}, err
	}
	b, err := os.ReadFile(h)
	if err != nil {
		return sandbox.ReadResult{}, &sandbox.FileError{Msg: fmt.Sprintf("%s: no such file", rel)}
	}
	sum := sha256.Sum256(b)
	return sandbox.ReadResult{Content: b, Size: int64(len(b)), Resolved: rel, SHA256: hex.EncodeToString(sum[:])}, nil
}

func (s *fakeSession) WriteFile(ctx context.Context, req sandbox.WriteRequest) (sandbox.WriteResult, error) {
	if err := s.check(); err != nil {
		return sandbox.WriteResult{}, err
	}
	h, rel, err := s.host(req.Path)
	if err != nil {
		return sandbox.WriteResult{}, err
	}
	if err := os.MkdirAll(filepath.Dir(h), 0o755); err != nil {
		return sandbox.WriteResult{}, &sandbox.FileError{Msg: err.Error()}
	}
	if err := os.WriteFile(h, req.Content, 0o644); err != nil {
		return sandbox.WriteResult{}, &sandbox.FileError{Msg: err.Error()}
	}
	sum := sha256.Sum256(req.Content)
	return sandbox.WriteResult{Resolved: rel, Bytes: int64(len(req.Content)), SHA256: hex.EncodeToString(sum[:])}, nil
}

func (s *fakeSession) Close(context.Context) error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	return nil
}
