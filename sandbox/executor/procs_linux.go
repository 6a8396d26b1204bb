package executor

import (
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

func makeNonDumpable() error {
	return unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
}

// listPIDs returns every process visible in the container's pid namespace.
func listPIDs() map[int]bool {
	pids := map[int]bool{}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return pids
	}
	for _, e := range ents {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			pids[pid] = true
		}
	}
	return pids
}

// killAllExcept SIGKILLs every process in the container except pid 1 (the
// engine's init, or the executor itself), the executor and the given survivors, repeating
// until none is left so that processes forked during the sweep die too.
// It returns how many processes it signalled.
func (s *Server) killAllExcept(survivors map[int]bool) int {
	killed := 0
	for round := 0; round < 1000; round++ {
		n := 0
		var victims []int
		for pid := range s.sweepable() {
			if pid == 1 || pid == s.self || survivors[pid] || zombie(pid) {
				continue
			}
			victims = append(victims, pid)
		}
		// Stop them all first, so that none can fork or act on another's
		// death (a shell running its next command once its child is
		// killed) while the sweep goes on; then kill them all. The
		// tracer keeps traced victims stopped meanwhile (held).
		s.held.hold(victims)
		for _, pid := range victims {
			_ = syscall.Kill(pid, syscall.SIGSTOP)
		}
		for _, pid := range victims {
			if syscall.Kill(pid, syscall.SIGKILL) == nil {
				n++
			}
		}
		s.held.release(victims)
		killed += n
		if n == 0 {
			return killed
		}
	}
	return killed
}

// sweepable lists the processes a sweep considers: every process in the
// container or, in tests on a host, only the executor's descendants.
func (s *Server) sweepable() map[int]bool {
	all := listPIDs()
	if !s.descendantsOnly {
		return all
	}
	parent := map[int]int{}
	for pid := range all {
		parent[pid] = ppid(pid)
	}
	mine := map[int]bool{}
	for pid := range all {
		for p, n := parent[pid], 0; p > 1 && n < len(all); p, n = parent[p], n+1 {
			if p == s.self {
				mine[pid] = true
				break
			}
		}
	}
	return mine
}

func ppid(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 2 {
		return 0
	}
	n, _ := strconv.Atoi(f[1])
	return n
}

// zombie reports whether the thread group pid has exited and only waits to
// be reaped; signalling it again achieves nothing. It judges every thread:
// a group whose leader exited looks like a zombie from the leader's state
// while its other threads still run.
func zombie(pid int) bool {
	dir := "/proc/" + strconv.Itoa(pid) + "/task"
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return true // gone
	}
	for _, t := range tasks {
		if !taskDead(dir + "/" + t.Name() + "/stat") {
			return false
		}
	}
	return true
}

func taskDead(stat string) bool {
	b, err := os.ReadFile(stat)
	if err != nil {
		return true
	}
	i := strings.LastIndexByte(string(b), ')')
	return i < 0 || i+2 >= len(b) || b[i+2] == 'Z' || b[i+2] == 'X'
}

// oomKills reads the container cgroup's OOM-kill counter (cgroup v2 or v1);
// -1 when unavailable.
func oomKills() int64 {
	for _, f := range []string{"/sys/fs/cgroup/memory.events", "/sys/fs/cgroup/memory/memory.oom_control"} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		if v, ok := field(string(b), "oom_kill"); ok {
			return v
		}
	}
	return -1
}

func field(s, name string) (int64, bool) {
	for _, line := range strings.Split(s, "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}
