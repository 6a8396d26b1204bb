package docker

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentbox/agentbox/sandbox"
	"github.com/agentbox/agentbox/sandbox/wire"
	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/pkg/stdcopy"
)

// dockerSession is one container. The protocol lives in the embedded
// wire.Client; this type supplies the attach stream, the kill and the
// container's life cycle.
type dockerSession struct {
	*wire.Client
	rt   *Runtime
	id   string
	cfg  sandbox.Config
	info sandbox.Info

	hj     types.HijackedResponse
	stderr *tailBuffer
	wg     sync.WaitGroup // the demultiplexer

	closeOnce sync.Once
	closeErr  error
	closed    atomic.Bool
	idMu      sync.Mutex
}

var _ sandbox.Session = (*dockerSession)(nil)

func (s *dockerSession) ID() string         { return s.id }
func (s *dockerSession) Info() sandbox.Info { return s.info }
func (s *dockerSession) kill(ctx context.Context) error {
	return s.rt.eng.ContainerRemove(ctx, s.containerID(), container.RemoveOptions{Force: true})
}

// attachStream is the executor's stdio over the engine's attach
// connection: writes go to the hijacked connection, reads come from the
// demultiplexed stdout.
type attachStream struct {
	hj types.HijackedResponse
	pr *io.PipeReader
}

func (a *attachStream) Read(p []byte) (int, error)         { return a.pr.Read(p) }
func (a *attachStream) Write(p []byte) (int, error)        { return a.hj.Conn.Write(p) }
func (a *attachStream) SetWriteDeadline(t time.Time) error { return a.hj.Conn.SetWriteDeadline(t) }
func (a *attachStream) CloseRead() error                   { return a.pr.CloseWithError(io.ErrClosedPipe) }
func (a *attachStream) Close() error                       { a.hj.Close(); return a.CloseRead() }

// connect attaches to the created container, starts it and says hello.
func (s *dockerSession) connect(ctx context.Context) error {
	cid := s.info.ContainerID
	hj, err := s.rt.eng.ContainerAttach(ctx, cid, container.AttachOptions{Stream: true, Stdin: true, Stdout: true, Stderr: true})
	if err != nil {
		return fmt.Errorf("%w: attaching to the container: %w", sandbox.ErrUnavailable, err)
	}
	s.hj = hj
	s.stderr = &tailBuffer{max: 4096}
	pr, pw := io.Pipe()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		_, err := stdcopy.StdCopy(pw, s.stderr, hj.Reader)
		if err == nil {
			err = io.EOF
		}
		pw.CloseWithError(err)
	}()
	s.Client = wire.NewClient(wire.Transport{
		Stream:  &attachStream{hj: hj, pr: pr},
		Kill:    s.kill,
		Explain: s.exitReason,
		Diag:    s.stderr.String,
	})

	if err := s.rt.eng.ContainerStart(ctx, cid, container.StartOptions{}); err != nil {
		return fmt.Errorf("%w: starting the container: %w", sandbox.ErrUnavailable, err)
	}
	return s.Hello(ctx, s.cfg.OutputCap, s.cfg.KeepBackground)
}

// exitReason explains a dead channel from the container's state, or
// returns "" when the container still runs.
func (s *dockerSession) exitReason(error) string {
	cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if st, ierr := s.rt.eng.ContainerInspect(cctx, s.containerID()); ierr == nil && st.State != nil && !st.State.Running {
		if st.State.OOMKilled {
			return fmt.Sprintf("the executor was killed: out of memory (limit %d bytes)", s.cfg.MemoryBytes)
		}
		return fmt.Sprintf("the executor exited (container exit code %d)", st.State.ExitCode)
	}
	return ""
}

// Close removes the container and waits for the reader goroutines.
func (s *dockerSession) Close(ctx context.Context) error {
	s.closeOnce.Do(func() {
		s.closed.Store(true)
		ctx = context.WithoutCancel(ctx)
		if s.containerID() == "" {
			// Closed while Start is still creating it: remove whatever
			// carries this session's label; Start checks closed too.
			s.rt.removeSession(ctx, s.id)
			s.rt.untrack(s)
			return
		}
		cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		defer cancel()
		err := s.rt.eng.ContainerRemove(cctx, s.containerID(), container.RemoveOptions{Force: true, RemoveVolumes: true})
		if err != nil && !isNotFound(err) {
			s.closeErr = fmt.Errorf("%w: removing container %s: %w; remove it with `agentbox gc`", sandbox.ErrUnavailable, s.info.ContainerID[:min(12, len(s.info.ContainerID))], err)
		}
		if s.Client != nil {
			_ = s.Client.Close()
		} else if s.hj.Conn != nil {
			s.hj.Close()
		}
		s.wg.Wait()
		s.rt.untrack(s)
	})
	return s.closeErr
}

// tailBuffer keeps the last max bytes written (the executor's stderr).
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append(t.b[:0], t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(bytes.TrimSpace(t.b))
}

// containerID is the container's id, "" until it is created. Start and
// Close (from a signal handler's CloseAll) may race, hence the lock.
func (s *dockerSession) containerID() string {
	s.idMu.Lock()
	defer s.idMu.Unlock()
	return s.info.ContainerID
}

func (s *dockerSession) setContainerID(id string) {
	s.idMu.Lock()
	defer s.idMu.Unlock()
	s.info.ContainerID = id
}
