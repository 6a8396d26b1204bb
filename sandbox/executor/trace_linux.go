package executor

import (
	"errors"
	"fmt"
	"os"
	"path"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"unsafe"

	"github.com/agentbox/agentbox/sandbox/wire"
	"golang.org/x/sys/unix"
)

// tracer owns every ptrace call of the executor. A tracee can only be
// controlled from the OS thread that traces it, so one goroutine locked to
// one thread for the executor's whole life runs them all (and starts every
// command, so that the thread is its tracer from the first instruction).
// The thread exists before any command starts, so a fork bomb cannot starve
// the executor of it.
type tracer struct {
	jobs chan func()
}

func newTracer() *tracer {
	t := &tracer{jobs: make(chan func())}
	ready := make(chan struct{})
	go func() {
		// Never unlocked: the thread dies with the executor and, with
		// PTRACE_O_EXITKILL, takes every tracee with it.
		runtime.LockOSThread()
		close(ready)
		for f := range t.jobs {
			f()
		}
	}()
	<-ready
	return t
}

// do runs f on the tracer thread and waits for it.
func (t *tracer) do(f func()) {
	done := make(chan struct{})
	t.jobs <- func() { f(); close(done) }
	<-done
}

const traceOptions = syscall.PTRACE_O_TRACEEXEC | syscall.PTRACE_O_TRACEFORK |
	syscall.PTRACE_O_TRACEVFORK | syscall.PTRACE_O_TRACECLONE | unix.PTRACE_O_EXITKILL

// traceCall follows one command's processes from the first exec to the
// root's exit. Its methods run on the tracer thread only.
type traceCall struct {
	judge Judge
	// ask asks the host about one exec while the program waits; it returns
	// whether to run it and must give up at the call's deadline.
	ask func(argv []string, pid int, d Decision) bool
	// limit bounds the live tasks (processes and threads) of the command;
	// a fork or clone beyond it is killed at birth. 0: no bound.
	limit int
	// untraced starts the command without ptrace (benchmarks only).
	untraced bool
	// viaShim starts the command through the exec shim (see Shim); start
	// sets it when a child may not ask to be traced (gVisor).
	viaShim bool

	// ids knows programs by content (nil: no manifest, names only).
	ids *identities
	// procs records parents and executed argv for the proxy's
	// attribution of connections (nil: not recorded).
	procs *procTable
	// expect are the programs the up-front analysis predicted (nil: no
	// unexpected_exec check); see observe_linux.go.
	expect map[string]bool
	// imgs are the traced processes whose image is a toolchain's file
	// (see toolchainctx_linux.go).
	imgs map[int]toolImage
	// held are the processes a sweep is killing: left stopped (nil:
	// none).
	held *stopHold

	root       int
	rootStatus syscall.WaitStatus
	tasks      map[int]bool // tid → its first stop was seen
	progs      programs
	stopped    []execStop
	overLimit  int
	noted      []wire.Alarm // unexpected and unknown programs that ran
	notedOver  int          // and those beyond maxNoted
}

// execStop is one exec that was not allowed to run.
type execStop struct {
	argv    []string
	exe     string
	pid     int
	verdict Verdict
	rule    string
	reason  string
}

// start starts the command traced from its first instruction: the child
// asks to be traced (PTRACE_TRACEME) before it executes bash, and stops
// right after that exec. Must run on the tracer thread.
func (c *traceCall) start(name string, argv []string, attr *os.ProcAttr) error {
	sys := *attr.Sys
	sys.Ptrace = !c.untraced
	a := *attr
	a.Sys = &sys
	var p *os.Process
	var err error
	if !c.viaShim {
		p, err = os.StartProcess(name, argv, &a)
	}
	if c.viaShim || errors.Is(err, syscall.EPERM) && sys.Ptrace {
		// gVisor: a non-dumpable child may not ask to be traced; a
		// fresh image of the agentbox binary may (see Shim).
		c.viaShim = true
		sname, sargv, sattr, serr := shimmed(name, argv, &a)
		if serr != nil {
			return serr
		}
		p, err = os.StartProcess(sname, sargv, sattr)
	}
	if err != nil {
		return err
	}
	c.root = p.Pid
	_ = p.Release() // reaped by wait4 below, never through p
	c.procs.exec(c.root, argv)
	c.tasks = map[int]bool{c.root: true}
	if c.untraced {
		return nil
	}
	var ws syscall.WaitStatus
	if _, err := wait4(c.root, &ws, 0); err != nil {
		return fmt.Errorf("waiting for the traced command to start: %w", err)
	}
	if !ws.Stopped() {
		c.rootStatus = ws
		delete(c.tasks, c.root)
		return fmt.Errorf("the traced command ended before it started (%v)", ws)
	}
	if err := syscall.PtraceSetOptions(c.root, traceOptions); err != nil {
		_ = syscall.Kill(c.root, syscall.SIGKILL)
		return fmt.Errorf("cannot trace the command (ptrace options: %w); exec-time command rules cannot be enforced", err)
	}
	// The first exec is the executor's own bash, whose script the host
	// judged up front: it continues unjudged.
	return syscall.PtraceCont(c.root, 0)
}

// run follows the command until its root process exits and returns the
// root's wait status.
func (c *traceCall) run() syscall.WaitStatus {
	for {
		var ws syscall.WaitStatus
		pid, err := wait4(-1, &ws, 0)
		if err != nil {
			// ECHILD: nothing left, not even the root (reaped elsewhere).
			return c.rootStatus
		}
		c.event(pid, ws)
		if pid == c.root && (ws.Exited() || ws.Signaled()) {
			return ws
		}
	}
}

// drain reaps whatever is left after the root exited: blocking until no
// child or tracee remains (everything was killed), or only what is ready.
func (c *traceCall) drain(block bool) {
	flags := unix.WNOHANG
	if block {
		flags = 0
	}
	for {
		var ws syscall.WaitStatus
		pid, err := wait4(-1, &ws, flags)
		if err != nil || pid <= 0 {
			return
		}
		c.event(pid, ws)
	}
}

// event handles one wait status of a tracee (or of an untraced child,
// which is simply reaped).
func (c *traceCall) event(pid int, ws syscall.WaitStatus) {
	switch {
	case ws.Exited() || ws.Signaled():
		delete(c.tasks, pid)
		delete(c.imgs, pid)
		c.procs.exit(pid)
		return
	case !ws.Stopped():
		return
	}
	if c.held.has(pid) {
		return // being killed: not resumed (its SIGKILL ends the stop)
	}
	sig := ws.StopSignal()
	if sig == syscall.SIGTRAP && ws.TrapCause() > 0 {
		c.ptraceEvent(pid, ws.TrapCause())
		return
	}
	if sig == syscall.SIGSTOP && !c.tasks[pid] {
		// A new task's first stop (it may come before its parent's fork
		// event): suppress it.
		if _, forked := c.tasks[pid]; !forked {
			c.procs.fork(ppid(pid), pid) // before the fork event: recorded now
		}
		c.tasks[pid] = true
		_ = syscall.PtraceCont(pid, 0)
		return
	}
	c.tasks[pid] = true
	switch sig {
	case syscall.SIGSTOP, syscall.SIGTSTP, syscall.SIGTTIN, syscall.SIGTTOU:
		if !hasSiginfo(pid) {
			// Group-stop: resume. Job-control stops are not kept for
			// traced commands (they would otherwise stay stopped until
			// the call's timeout).
			_ = syscall.PtraceCont(pid, 0)
			return
		}
	}
	_ = syscall.PtraceCont(pid, int(sig)) // deliver the signal
}

func (c *traceCall) ptraceEvent(pid, cause int) {
	switch cause {
	case syscall.PTRACE_EVENT_FORK, syscall.PTRACE_EVENT_VFORK, syscall.PTRACE_EVENT_CLONE:
		msg, err := syscall.PtraceGetEventMsg(pid)
		if err == nil {
			child := int(msg)
			if c.limit > 0 && len(c.tasks) >= c.limit {
				// Over the command's share of the pids limit: the new
				// task dies before it runs (for a thread, its process).
				_ = syscall.Kill(child, syscall.SIGKILL)
				c.overLimit++
			} else if _, seen := c.tasks[child]; !seen {
				c.tasks[child] = false
				c.procs.fork(pid, child) // (else its first stop came first and recorded it)
			}
			c.forked(pid, child)
		}
	case syscall.PTRACE_EVENT_EXEC:
		if msg, err := syscall.PtraceGetEventMsg(pid); err == nil && int(msg) != pid {
			// A non-leader thread executed: it took the leader's id.
			delete(c.tasks, int(msg))
		}
		if !c.exec(pid) {
			_ = syscall.Kill(pid, syscall.SIGKILL) // before its first instruction
			return
		}
	}
	_ = syscall.PtraceCont(pid, 0)
}

// exec judges the program pid has just executed; false stops it.
func (c *traceCall) exec(pid int) bool {
	argv, exe, named, err := execArgv(pid)
	if err != nil {
		c.stopped = append(c.stopped, execStop{argv: argv, exe: exe, pid: pid, verdict: Deny,
			rule: "exec-time check", reason: "cannot read what was executed: " + err.Error()})
		return false
	}
	other, prog := "", argv[0] // the executable, when argv[0] names another program
	if !named {
		other, prog = exe, exe
		c.procs.exec(pid, append([]string{exe}, argv[1:]...))
	} else {
		c.procs.exec(pid, argv)
	}
	var id identity
	var tool string
	if c.ids != nil {
		id = c.ids.identify(pid, exe)
		tool = c.toolchainOfExec(pid, exe, id)
	}
	x := ran{pid: pid, argv: argv, exe: exe, prog: prog, id: id, toolchain: tool, unknown: c.ids != nil && !id.known}
	if c.judge == nil {
		c.allowed(x)
		return true
	}
	d := c.judge.JudgeExec(Exec{Argv: argv, Exe: other, Names: id.names, Unknown: x.unknown, Toolchain: tool})
	if d.Verdict == Allow {
		c.allowed(x) // only programs that run are listed
		return true
	}
	if len(id.names) > 0 && !slices.Contains(id.names, path.Base(argv[0])) {
		d.Reason = "by content the file executed is the image's " + strings.Join(id.names, "/") + "; " + d.Reason
	}
	// Reported with the program that really runs first (its path, when
	// argv[0] named another).
	shown := argv
	if other != "" {
		shown = append([]string{exe}, argv[1:]...)
	}
	if d.Verdict == Ask && c.ask != nil && c.ask(shown, pid, d) {
		c.allowed(x)
		return true
	}
	c.stopped = append(c.stopped, execStop{argv: shown, exe: exe, pid: pid, verdict: d.Verdict, rule: d.Rule, reason: d.Reason})
	c.observeDenied(x)
	return false
}

func wait4(pid int, ws *syscall.WaitStatus, flags int) (int, error) {
	for {
		p, err := syscall.Wait4(pid, ws, flags|unix.WALL, nil)
		if !errors.Is(err, syscall.EINTR) {
			return p, err
		}
	}
}

// hasSiginfo tells a signal-delivery-stop (siginfo available) from a
// group-stop (EINVAL).
func hasSiginfo(pid int) bool {
	var si [128]byte
	_, _, errno := syscall.Syscall6(syscall.SYS_PTRACE, syscall.PTRACE_GETSIGINFO, uintptr(pid), 0, uintptr(unsafe.Pointer(&si[0])), 0, 0)
	return errno == 0
}
