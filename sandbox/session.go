package sandbox

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentbox/agentbox/sandbox/wire"
	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/pkg/stdcopy"
)

// grace is how long past a call's own timeout the host waits for the
// executor's answer before it declares the executor dead.
const grace = 10 * time.Second

// helloTimeout bounds container start-up.
const helloTimeout = 60 * time.Second

type frame struct {
	resp *wire.Response
	err  error
}

type dockerSession struct {
	rt   *Docker
	id   string
	cfg  Config
	info Info

	key    []byte
	hj     types.HijackedResponse
	frames chan frame
	done   chan struct{} // closed by Close: the reader stops delivering
	stderr *tailBuffer
	wg     sync.WaitGroup

	mu     sync.Mutex // one request at a time
	nextID uint64
	broken error

	closeOnce sync.Once
	closeErr  error
	closed    atomic.Bool
	idMu      sync.Mutex
}

var _ Session = (*dockerSession)(nil)

func (s *dockerSession) ID() string { return s.id }
func (s *dockerSession) Info() Info { return s.info }

// connect attaches to the created container, starts it and says hello.
func (s *dockerSession) connect(ctx context.Context) error {
	cid := s.info.ContainerID
	hj, err := s.rt.eng.ContainerAttach(ctx, cid, container.AttachOptions{Stream: true, Stdin: true, Stdout: true, Stderr: true})
	if err != nil {
		return fmt.Errorf("%w: attaching to the container: %v", ErrUnavailable, shortErr(err))
	}
	s.hj = hj
	s.frames = make(chan frame, 1)
	s.done = make(chan struct{})
	s.stderr = &tailBuffer{max: 4096}
	s.key = make([]byte, 32)
	_, _ = rand.Read(s.key)

	pr, pw := io.Pipe()
	s.wg.Add(2)
	go func() {
		defer s.wg.Done()
		_, err := stdcopy.StdCopy(pw, s.stderr, hj.Reader)
		if err == nil {
			err = io.EOF
		}
		pw.CloseWithError(err)
	}()
	go func() {
		defer s.wg.Done()
		defer close(s.frames)
		defer pr.CloseWithError(io.ErrClosedPipe) // unblocks the demultiplexer
		for {
			resp, err := wire.ReadResponse(pr, s.key)
			if err != nil {
				pr.CloseWithError(err)
			}
			select {
			case s.frames <- frame{resp: resp, err: err}:
			case <-s.done:
				return
			}
			if err != nil {
				return
			}
		}
	}()

	if err := s.rt.eng.ContainerStart(ctx, cid, container.StartOptions{}); err != nil {
		return fmt.Errorf("%w: starting the container: %v", ErrUnavailable, shortErr(err))
	}
	resp, err := s.roundTrip(ctx, &wire.Request{Op: wire.OpHello, Key: s.key, Cap: s.cfg.OutputCap, Keep: s.cfg.KeepBackground}, helloTimeout)
	if err != nil {
		return err
	}
	if resp.Error != "" {
		return fmt.Errorf("%w: executor refused hello: %s", ErrExecutor, resp.Error)
	}
	return nil
}

// roundTrip sends one request and waits for its answer for at most wait.
// Anything wrong with the channel breaks the session for good and kills
// the container: fail closed.
func (s *dockerSession) roundTrip(ctx context.Context, req *wire.Request, wait time.Duration) (*wire.Response, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.broken != nil {
		return nil, s.broken
	}
	s.nextID++
	req.ID = s.nextID
	// A frame nobody asked for means the channel is not ours alone.
	select {
	case f := <-s.frames:
		return nil, s.fail(fmt.Errorf("%w: unsolicited answer from the executor (%v); the container was killed", ErrExecutor, f.err))
	default:
	}
	key := s.key
	if req.Op == wire.OpHello {
		key = nil // the hello carries the key
	}
	var buf bytes.Buffer
	if err := wire.WriteRequest(&buf, key, req); err != nil {
		return nil, fmt.Errorf("request too large: %w", err)
	}
	// The write must not outlive the call either: a stopped executor stops
	// draining its stdin, and a large request would block for good.
	_ = s.hj.Conn.SetWriteDeadline(time.Now().Add(wait))
	stop := context.AfterFunc(ctx, func() { _ = s.hj.Conn.SetWriteDeadline(time.Unix(1, 0)) })
	_, werr := s.hj.Conn.Write(buf.Bytes())
	stop()
	if werr != nil {
		if ctx.Err() != nil {
			return nil, s.fail(fmt.Errorf("%w: %w", ErrClosed, ctx.Err()))
		}
		return nil, s.fail(fmt.Errorf("%w: sending request: %v%s", ErrExecutor, werr, s.diag()))
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case f, ok := <-s.frames:
		if !ok || f.err != nil {
			err := io.EOF
			if ok {
				err = f.err
			}
			return nil, s.fail(fmt.Errorf("%w: %s%s", ErrExecutor, s.exitReason(err), s.diag()))
		}
		if f.resp.ID != req.ID {
			return nil, s.fail(fmt.Errorf("%w: answer for request %d while waiting for %d", ErrExecutor, f.resp.ID, req.ID))
		}
		return f.resp, nil
	case <-timer.C:
		return nil, s.fail(fmt.Errorf("%w: no answer within %s; the container was killed", ErrExecutor, wait))
	case <-ctx.Done():
		return nil, s.fail(fmt.Errorf("%w: %w", ErrClosed, ctx.Err()))
	}
}

// fail marks the session broken and kills its container.
func (s *dockerSession) fail(err error) error {
	s.broken = err
	cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_ = s.rt.eng.ContainerRemove(cctx, s.info.ContainerID, container.RemoveOptions{Force: true})
	return err
}

func (s *dockerSession) exitReason(err error) string {
	cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if st, ierr := s.rt.eng.ContainerInspect(cctx, s.info.ContainerID); ierr == nil && st.State != nil && !st.State.Running {
		if st.State.OOMKilled {
			return fmt.Sprintf("the executor was killed: out of memory (limit %d bytes)", s.cfg.MemoryBytes)
		}
		return fmt.Sprintf("the executor exited (container exit code %d)", st.State.ExitCode)
	}
	if errors.Is(err, io.EOF) {
		return "the executor closed the channel"
	}
	return "bad answer from the executor: " + err.Error()
}

func (s *dockerSession) diag() string {
	if t := s.stderr.String(); t != "" {
		return "; executor said: " + t
	}
	return ""
}

// Exec runs one command.
func (s *dockerSession) Exec(ctx context.Context, req ExecRequest) (ExecResult, error) {
	timeout := req.Timeout
	if timeout <= 0 {
		timeout = wire.DefaultTimeout
	}
	timeout = max(timeout, time.Millisecond) // the executor counts whole milliseconds
	resp, err := s.roundTrip(ctx, &wire.Request{Op: wire.OpExec, Command: req.Command, TimeoutMS: timeout.Milliseconds()}, timeout+grace)
	if err != nil {
		return ExecResult{}, err
	}
	if resp.Error != "" {
		return ExecResult{}, fmt.Errorf("%w: %s", ErrExecutor, resp.Error)
	}
	d := time.Duration(resp.DurationNS)
	return ExecResult{
		ExitCode: resp.ExitCode, TimedOut: resp.TimedOut, OOMKilled: resp.OOMKilled,
		Duration: d, DurationMS: d.Milliseconds(),
		Output: resp.Output, OutputBytes: resp.OutputBytes, OutputSHA: resp.OutputSHA, Truncated: resp.Truncated,
	}, nil
}

const fileWait = 60 * time.Second

func wireRules(r *FileRules) *wire.Rules {
	if r == nil {
		return nil
	}
	return &wire.Rules{Allow: r.Allow, Deny: r.Deny}
}

func fileErr(resp *wire.Response) error {
	if resp.Error == "" {
		return nil
	}
	return &FileError{Msg: resp.Error, Resolved: string(resp.Resolved), Rule: resp.Rule, Denied: resp.Denied}
}

// ReadFile reads a file below /workspace.
func (s *dockerSession) ReadFile(ctx context.Context, req ReadRequest) (ReadResult, error) {
	resp, err := s.roundTrip(ctx, &wire.Request{Op: wire.OpRead, Path: []byte(req.Path), Offset: req.Offset, Limit: req.Limit, Rules: wireRules(req.Rules)}, fileWait)
	if err != nil {
		return ReadResult{}, err
	}
	if err := fileErr(resp); err != nil {
		return ReadResult{}, err
	}
	return ReadResult{Content: resp.Content, Size: resp.Size, Resolved: string(resp.Resolved), SHA256: resp.SHA256}, nil
}

// WriteFile writes a file below /workspace atomically.
func (s *dockerSession) WriteFile(ctx context.Context, req WriteRequest) (WriteResult, error) {
	if len(req.Content) > wire.MaxFileBytes {
		return WriteResult{}, &FileError{Msg: fmt.Sprintf("write_file: content is %d bytes, over the %d-byte cap", len(req.Content), wire.MaxFileBytes)}
	}
	resp, err := s.roundTrip(ctx, &wire.Request{Op: wire.OpWrite, Path: []byte(req.Path), Content: req.Content, Rules: wireRules(req.Rules), Write: true}, fileWait)
	if err != nil {
		return WriteResult{}, err
	}
	if err := fileErr(resp); err != nil {
		return WriteResult{}, err
	}
	return WriteResult{Resolved: string(resp.Resolved), Bytes: resp.Size, SHA256: resp.SHA256}, nil
}

// Stat describes a path below /workspace without following a final symlink.
func (s *dockerSession) Stat(ctx context.Context, path string) (typ string, size int64, err error) {
	resp, err := s.roundTrip(ctx, &wire.Request{Op: wire.OpStat, Path: []byte(path)}, fileWait)
	if err != nil {
		return "", 0, err
	}
	if err := fileErr(resp); err != nil {
		return "", 0, err
	}
	return resp.Type, resp.Size, nil
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
			s.closeErr = fmt.Errorf("%w: removing container %s: %v; remove it with `agentbox gc`", ErrUnavailable, s.info.ContainerID[:min(12, len(s.info.ContainerID))], shortErr(err))
		}
		if s.hj.Conn != nil {
			close(s.done)
			s.hj.Close()
			s.wg.Wait()
		}
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
