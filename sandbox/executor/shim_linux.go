package executor

import (
	"fmt"
	"os"
	"runtime"
	"syscall"
)

// ShimArg is the first argument that makes the agentbox binary the exec
// shim (see Shim). main dispatches on it before anything else runs.
const ShimArg = "executor-exec"

// Shim asks to be traced by its parent (the executor's tracer thread) and
// executes args[0] with argv args[1:]: what the Go runtime's Ptrace option
// does in the child between fork and exec, but in a fresh image. The
// executor is non-dumpable and so is a child it forks until that child
// executes; gVisor (unlike Linux) refuses PTRACE_TRACEME from a
// non-dumpable task, and a freshly executed image is dumpable. The first
// exec stop the tracer sees is then the command's bash, exactly as with
// the runtime's option. It never returns.
func Shim(args []string) {
	runtime.LockOSThread() // the traced thread is the one that executes
	if len(args) < 2 {
		fmt.Fprintln(os.Stderr, "agentbox executor-exec: want PATH ARGV0 [ARGS...]")
		os.Exit(127)
	}
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PTRACE, syscall.PTRACE_TRACEME, 0, 0); errno != 0 {
		fmt.Fprintln(os.Stderr, "agentbox executor-exec: cannot be traced:", errno)
		os.Exit(127)
	}
	err := syscall.Exec(args[0], args[1:], os.Environ())
	fmt.Fprintln(os.Stderr, "agentbox executor-exec:", err)
	os.Exit(127)
}

// The shim runs from init, not from main: init functions run on the
// process's main thread (the runtime locks the main goroutine to it while
// packages initialise), so the thread that asks to be traced and executes
// is the thread group leader, whose pid the tracer waits on. From
// main.main the goroutine may have moved to another of the runtime's
// threads; a non-leader's exec takes over the leader's id, and under
// gVisor the tracer's wait for the leader then never returned now and then
// (a trivial call with no answer: "printf ”", "grep Seccomp").
func init() {
	if len(os.Args) > 1 && os.Args[1] == ShimArg {
		Shim(os.Args[2:])
	}
}

// shimmed rewrites a traced start through the shim: the same program and
// argv, started untraced as the agentbox binary, which then asks to be
// traced itself.
func shimmed(name string, argv []string, attr *os.ProcAttr) (string, []string, *os.ProcAttr, error) {
	self, err := os.Executable()
	if err != nil {
		return "", nil, nil, fmt.Errorf("the exec shim needs the executor's own path: %w", err)
	}
	sys := *attr.Sys
	sys.Ptrace = false
	a := *attr
	a.Sys = &sys
	return self, append([]string{self, ShimArg, name}, argv...), &a, nil
}
