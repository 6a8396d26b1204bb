package executor

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/agentbox/agentbox/sandbox/wire"
)

// exec runs one command under bash in its own session, captures its output
// within the cap, and kills everything it leaves behind (or, on timeout,
// everything it started).
func (s *Server) exec(req *wire.Request) *wire.Response {
	start := time.Now()
	// With background: keep, processes of earlier calls survive a timeout;
	// otherwise nothing but init and the executor exists between calls.
	var before map[int]bool
	if s.keep {
		before = listPIDs()
	}

	pr, pw, err := os.Pipe()
	if err != nil {
		return &wire.Response{Error: "pipe: " + err.Error()}
	}
	cmd := exec.Command("/bin/bash", "--noprofile", "--norc", "-c", req.Command)
	cmd.Dir = s.root()
	cmd.Env = childEnv()
	cmd.Stdin = nil // /dev/null
	cmd.Stdout, cmd.Stderr = pw, pw
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		pr.Close()
		pw.Close()
		return &wire.Response{Error: "starting bash: " + err.Error(), ExitCode: 127}
	}
	pw.Close()

	capt := newCapture(s.cap)
	sink := &detachable{w: capt}
	copied := make(chan struct{})
	go func() {
		// Reads until every holder of the pipe is gone; with background:
		// keep that may be long after the call, and the output then goes
		// nowhere (but the background process never dies of SIGPIPE).
		_, _ = io.Copy(sink, pr)
		pr.Close()
		close(copied)
	}()

	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()

	timeout := time.Duration(req.TimeoutMS) * time.Millisecond
	if timeout <= 0 {
		timeout = wire.DefaultTimeout
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()

	var waitErr error
	timedOut := false
	select {
	case waitErr = <-done:
	case <-timer.C:
		timedOut = true
		// Everything that did not exist before this call dies: the process
		// group, setsid/nohup escapes and double forks alike.
		s.killAllExcept(before)
		waitErr = <-done
	}
	if !s.keep || timedOut {
		s.killAllExcept(before)
		<-copied
	} else {
		// Background processes may hold the pipe open: take what arrives
		// shortly, then let the reader drain into nothing.
		t := time.NewTimer(100 * time.Millisecond)
		select {
		case <-copied:
		case <-t.C:
		}
		t.Stop()
		sink.detach()
	}

	out, truncated, total, sum := capt.result()
	resp := &wire.Response{
		ExitCode:    exitCode(waitErr),
		TimedOut:    timedOut,
		DurationNS:  int64(time.Since(start)),
		Output:      out,
		OutputBytes: total,
		OutputSHA:   sum,
		Truncated:   truncated,
	}
	if timedOut {
		resp.ExitCode = 124
	}
	if after := oomKills(); s.ooms >= 0 && after > s.ooms {
		resp.OOMKilled = true
		s.ooms = after
	}
	return resp
}

func exitCode(err error) int {
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ee.ExitCode()
	}
	return 126
}

// childEnv is the executor's environment, which the host set to exactly the
// allow-listed variables, without the executor's own settings.
func childEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if len(kv) >= 9 && kv[:9] == "AGENTBOX_" {
			continue
		}
		env = append(env, kv)
	}
	return env
}

// detachable passes writes to w until detached, then discards them.
type detachable struct {
	mu sync.Mutex
	w  io.Writer
}

func (d *detachable) Write(p []byte) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.w == nil {
		return len(p), nil
	}
	return d.w.Write(p)
}

func (d *detachable) detach() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.w = nil
}
