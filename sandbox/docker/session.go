package docker

import (
	"context"
	"errors"
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
	rt    *Runtime
	id    string
	cfg   sandbox.Config
	info  sandbox.Info
	masks *fileMasks // removed once the container is gone

	egress *egressServer // network: proxy only

	hj     types.HijackedResponse
	stderr *wire.TailBuffer
	wg     sync.WaitGroup // the demultiplexer

	closeOnce sync.Once
	closeErr  error
	closed    atomic.Bool
	// engineGone: the engine did not answer a kill; Close does not wait
	// the full EngineTimeout for it again.
	engineGone atomic.Bool
	idMu       sync.Mutex
}

var _ sandbox.Session = (*dockerSession)(nil)

func (s *dockerSession) ID() string         { return s.id }
func (s *dockerSession) Info() sandbox.Info { return s.info }

// kill removes the container when the channel broke. A kill the engine
// does not answer says what is known, and Close then does not wait long
// for the same engine again.
func (s *dockerSession) kill(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, killTimeout)
	defer cancel()
	err := s.rt.eng.ContainerRemove(ctx, s.containerID(), container.RemoveOptions{Force: true, RemoveVolumes: true})
	if err == nil || isNotFound(err) {
		return nil
	}
	if errors.Is(err, ErrNoAnswer) || errors.Is(err, context.DeadlineExceeded) {
		s.engineGone.Store(true)
		return s.mayStillExist(fmt.Sprintf("no answer from the engine in %s", killTimeout))
	}
	return s.mayStillExist("the engine could not remove it: " + err.Error())
}

// mayStillExist is the error for a sandbox agentbox could not remove.
func (s *dockerSession) mayStillExist(what string) error {
	stops := "it keeps running until it is removed"
	if hb := s.cfg.Enforce.Heartbeat; hb > 0 {
		stops = fmt.Sprintf("it stops itself within %s (its executor no longer hears from agentbox)", (3 * hb).Round(time.Second))
	}
	return fmt.Errorf("%w: removing sandbox %s: %s; the sandbox may still exist; %s; `agentbox gc` removes it",
		sandbox.ErrUnavailable, s.info.ContainerID[:min(12, len(s.info.ContainerID))], what, stops)
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
	s.stderr = &wire.TailBuffer{Max: 4096}
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

		DialProxy: s.egress.dialProxy(),
	})

	if err := s.rt.eng.ContainerStart(ctx, cid, container.StartOptions{}); err != nil {
		return fmt.Errorf("%w: starting the container: %w", sandbox.ErrUnavailable, err)
	}
	return s.HelloConfig(ctx, s.cfg, s.egress.socket())
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
		defer s.egress.stop() // after the container: nothing can connect then
		ctx = context.WithoutCancel(ctx)
		if s.containerID() == "" {
			// Closed while Start is still creating it: remove whatever
			// carries this session's label; Start checks closed too.
			s.rt.removeSession(ctx, s.id)
			s.masks.remove()
			s.rt.untrack(s)
			return
		}
		wait := EngineTimeout
		if s.engineGone.Load() {
			wait = killTimeout / 2 // it did not answer the kill either
		}
		cctx, cancel := context.WithTimeout(ctx, wait)
		defer cancel()
		err := s.rt.eng.ContainerRemove(cctx, s.containerID(), container.RemoveOptions{Force: true, RemoveVolumes: true})
		switch {
		case err == nil || isNotFound(err):
		case errors.Is(err, ErrNoAnswer) || errors.Is(err, context.DeadlineExceeded):
			s.closeErr = s.mayStillExist(fmt.Sprintf("no answer from the engine in %s", wait))
		default:
			s.closeErr = s.mayStillExist("the engine could not remove it: " + err.Error())
		}
		if s.Client != nil {
			_ = s.Client.Close()
		} else if s.hj.Conn != nil {
			s.hj.Close()
		}
		s.wg.Wait()
		if s.closeErr == nil {
			s.masks.remove() // the container is gone: nothing mounts them any more
		} else {
			s.rt.noteRemoved(s.id, false) // Sweep tries again once the engine answers
		}
		s.rt.untrack(s)
	})
	return s.closeErr
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
