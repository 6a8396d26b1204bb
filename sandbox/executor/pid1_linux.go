package executor

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// becomeReaper makes orphans of every command the executor's children, so
// that the tracer reaps them (as PID 1 they are anyway). The executor can
// then be the container's PID 1 with no init in front of it.
func becomeReaper() error {
	if os.Getpid() == 1 {
		return nil
	}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("cannot become the child subreaper: %w", err)
	}
	return nil
}

// prespawnThreads makes the Go runtime create n OS threads now and keep
// them idle, so that the executor does not need a new thread (which counts
// against the container's pids limit) while a command forks as fast as it
// can.
func prespawnThreads(n int) {
	var locked sync.WaitGroup
	release := make(chan struct{})
	var done sync.WaitGroup
	for range n {
		locked.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			runtime.LockOSThread() // a thread of its own while held
			locked.Done()
			<-release
			runtime.UnlockOSThread() // back to the runtime's idle pool
		}()
	}
	locked.Wait()
	close(release)
	done.Wait()
}

// pidsReserve is how many tasks of the container's pids limit are kept for
// the executor and the engine whatever a command does.
const pidsReserve = 16

// pidsBudget is how many tasks (processes and threads) a command may have
// alive at once: the container's limit less what exists now and a reserve.
// 0 means unbounded (no limit known).
func (s *Server) pidsBudget() int {
	if s.taskLimit > 0 {
		return s.taskLimit
	}
	max := s.pidsMax
	if max <= 0 {
		max = cgroupInt("pids.max")
	}
	if max <= 0 {
		return 0
	}
	cur := cgroupInt("pids.current")
	if cur < 0 {
		cur = 0
	}
	return maxInt(max-cur-pidsReserve, 1)
}

func maxInt(a, b int) int {
	if a > b {
		return a
	}
	return b
}

// cgroupInt reads a pids controller file (cgroup v2, then v1); -1 when
// absent or "max".
func cgroupInt(name string) int {
	for _, f := range []string{"/sys/fs/cgroup/" + name, "/sys/fs/cgroup/pids/" + name} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		n, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			return -1
		}
		return n
	}
	return -1
}
