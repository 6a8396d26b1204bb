package executor

import "sync"

// stopHold is the set of processes a sweep is killing: between its SIGSTOP
// and its SIGKILL, the tracer leaves such a process stopped instead of
// resuming it (the tracer resumes job-control stops of traced commands,
// which made the sweep's SIGSTOP no stop at all: a shell whose child was
// killed first ran its next command before its own SIGKILL came). The
// zero value holds nothing.
type stopHold struct {
	mu   sync.Mutex
	pids map[int]bool
}

// set holds pids until clear.
func (h *stopHold) set(pids []int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.pids = make(map[int]bool, len(pids))
	for _, p := range pids {
		h.pids[p] = true
	}
}

// clear holds nothing again: the held processes have their SIGKILL (a
// killed process resumed runs nothing), and their numbers may be reused.
func (h *stopHold) clear() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.pids = nil
}

// has reports whether pid is held.
func (h *stopHold) has(pid int) bool {
	if h == nil {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.pids[pid]
}
