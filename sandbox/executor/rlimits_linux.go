package executor

import "golang.org/x/sys/unix"

// maxNofile is the open-files bound of every command (docs/DESIGN.md's ulimits).
const maxNofile = 4096

// lowerRlimits applies agentbox's ulimits to the executor and so to every
// command it starts: no core dumps, at most maxNofile open files. Docker
// sets them on the container already; a Kubernetes pod has no way to say
// them, so the executor does it itself (lowering needs no privilege).
func lowerRlimits() {
	_ = unix.Setrlimit(unix.RLIMIT_CORE, &unix.Rlimit{Cur: 0, Max: 0})
	var nf unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &nf) == nil && (nf.Max > maxNofile || nf.Cur > maxNofile) {
		nf.Cur, nf.Max = min(nf.Cur, maxNofile), min(nf.Max, maxNofile)
		_ = unix.Setrlimit(unix.RLIMIT_NOFILE, &nf)
	}
}
