package executor

import (
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/agentbox/agentbox/sandbox/wire"
)

// exec runs one command under bash in its own session, traced: every
// program it executes is judged at its exec stop. It captures the output
// within the cap, kills everything the command leaves behind (or, on
// timeout, everything it started) and then checks the workspace for
// forbidden effects.
func (s *Server) exec(req *wire.Request) *wire.Response {
	start := time.Now()
	// With background: keep, processes of earlier calls survive a timeout;
	// otherwise nothing but init and the executor exists between calls.
	var before map[int]bool
	if s.keep {
		before = listPIDs()
	}
	timeout := time.Duration(req.TimeoutMS) * time.Millisecond
	if timeout <= 0 {
		timeout = wire.DefaultTimeout
	}
	deadline := start.Add(timeout)

	devnull, err := os.Open(os.DevNull)
	if err != nil {
		return &wire.Response{Error: "opening /dev/null: " + err.Error()}
	}
	defer devnull.Close()
	pipes, err := newOutPipes(req.StreamOutput)
	if err != nil {
		return &wire.Response{Error: "pipe: " + err.Error()}
	}
	c := &traceCall{judge: s.judge, limit: s.pidsBudget(), untraced: s.noTrace, viaShim: s.viaShim, ids: s.ids, procs: s.procs, held: &s.held}
	if req.Expect != nil {
		// The executor's own bash (started through the shim under gVisor,
		// so seen at an exec stop) is expected.
		c.expect = map[string]bool{"bash": true}
		for _, p := range req.Expect {
			c.expect[p] = true
		}
	}
	if s.link != nil {
		c.ask = s.link.asker(req.ID, deadline)
	}
	attr := &os.ProcAttr{Dir: s.dir(), Env: childEnv(), Files: []*os.File{devnull, pipes.out, pipes.err},
		Sys: &syscall.SysProcAttr{Setsid: true}}
	s.tracer.do(func() { err = c.start("/bin/bash", []string{"bash", "--noprofile", "--norc", "-c", req.Command}, attr) })
	s.viaShim = c.viaShim
	pipes.closeWrite()
	if err != nil {
		pipes.closeRead()
		s.killAllExcept(before)
		s.tracer.do(func() { c.drain(!s.keep) })
		return &wire.Response{Error: "starting bash: " + err.Error(), ExitCode: 127}
	}

	capt := newCapture(s.cap)
	sink := &outSink{capt: capt}
	if req.StreamOutput && s.link != nil {
		sink.send = func(stream string, p []byte) error {
			return s.link.reply(&wire.Response{ID: req.ID, Out: &wire.OutChunk{Stream: stream, Data: p}})
		}
	}
	// The readers read until every holder of the pipes is gone; with
	// background: keep that may be long after the call, and the output
	// then goes nowhere (but the background process never dies of
	// SIGPIPE).
	copied := pipes.copyTo(sink)

	done := make(chan syscall.WaitStatus, 1)
	go s.tracer.do(func() { done <- c.run() })

	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()

	var cancels <-chan uint64
	if s.link != nil {
		cancels = s.link.cancels
	}
	var ws syscall.WaitStatus
	timedOut, interrupted := false, false
wait:
	for {
		select {
		case ws = <-done:
			break wait
		case <-timer.C:
			timedOut = true
		case id := <-cancels:
			if id != req.ID {
				continue // a cancel that came too late for an earlier call
			}
			interrupted = true
		}
		// Everything that did not exist before this call dies: the process
		// group, setsid/nohup escapes and double forks alike.
		s.killAllExcept(before)
		ws = <-done
		break
	}
	if !s.keep || timedOut || interrupted {
		s.killAllExcept(before)
		s.tracer.do(func() { c.drain(!s.keep) })
		<-copied
		sink.detach()
	} else {
		s.tracer.do(func() { c.drain(false) })
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
		ExitCode:    waitCode(ws),
		TimedOut:    timedOut,
		Interrupted: interrupted,
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
	c.report(resp)
	if s.effects != nil {
		resp.Alarms = append(resp.Alarms, s.effects.check()...)
	}
	resp.DurationNS = int64(time.Since(start))
	return resp
}

// waitCode maps a wait status to a shell-style exit code.
func waitCode(ws syscall.WaitStatus) int {
	switch {
	case ws.Exited():
		return ws.ExitStatus()
	case ws.Signaled():
		return 128 + int(ws.Signal())
	}
	return 126
}

// report puts what the tracer saw into the response.
func (c *traceCall) report(resp *wire.Response) {
	resp.Programs = c.progs.list
	resp.Dropped = c.progs.dropped
	for _, st := range c.stopped {
		resp.Execs = append(resp.Execs, wire.ExecStop{Argv: st.argv, Exe: st.exe, PID: st.pid,
			Verdict: st.verdict.String(), Rule: st.rule, Reason: st.reason})
	}
	resp.Alarms = append(resp.Alarms, c.noted...)
	if c.notedOver > 0 {
		resp.Alarms = append(resp.Alarms, wire.Alarm{What: "unexpected_exec", Action: "reported",
			Rule: fmt.Sprintf("%d more programs that were not predicted or not in the image ran (not listed)", c.notedOver)})
	}
	if c.overLimit > 0 {
		resp.Alarms = append(resp.Alarms, wire.Alarm{What: "pids", Action: "killed",
			Rule: fmt.Sprintf("%d processes or threads killed at birth: the command may have at most %d alive at once", c.overLimit, c.limit)})
	}
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
