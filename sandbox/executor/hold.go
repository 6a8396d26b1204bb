package executor

import "sync"

// stopHold is the set of processes sweeps are killing: between a sweep's
// SIGSTOP and its SIGKILL, the tracer leaves such a process stopped
// instead of resuming it (the tracer resumes job-control stops of traced
// commands, which made the sweep's SIGSTOP no stop at all: a shell whose
// child was killed first ran its next command before its own SIGKILL
// came). Counted, so that two sweeps at once (the dead man's switch
// firing while a call sweeps its own processes) do not release each
// other's. The zero value holds nothing.
type stopHold struct {
	mu   sync.Mutex
	pids map[int]int
}

// hold holds pids until release.
func (h *stopHold) hold(pids []int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.pids == nil {
		h.pids = make(map[int]int, len(pids))
	}
	for _, p := range pids {
		h.pids[p]++
	}
}

// release ends hold(pids): the held processes have their SIGKILL (a
// killed process resumed runs nothing), and their numbers may be reused.
func (h *stopHold) release(pids []int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, p := range pids {
		if h.pids[p]--; h.pids[p] <= 0 {
			delete(h.pids, p)
		}
	}
}

// has reports whether pid is held.
func (h *stopHold) has(pid int) bool {
	if h == nil {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.pids[pid] > 0
}
