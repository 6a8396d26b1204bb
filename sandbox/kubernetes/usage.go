package kubernetes

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/agentbox/agentbox/sandbox"
)

// usageScript prints the pod container's own cgroup figures (v1 or v2)
// with bash builtins only (no program runs, so no exec-time rule or
// identity check is involved): one "<tag> <line>" per line read.
const usageScript = `r() { local l; while IFS= read -r l; do echo "$1 $l"; done < "$2"; } 2>/dev/null
r cpuacct /sys/fs/cgroup/cpuacct/cpuacct.usage
r cpuacct /sys/fs/cgroup/cpu,cpuacct/cpuacct.usage
r cpustat /sys/fs/cgroup/cpu.stat
r peak /sys/fs/cgroup/memory/memory.max_usage_in_bytes
r peak /sys/fs/cgroup/memory.peak
r oom /sys/fs/cgroup/memory/memory.oom_control
r oom /sys/fs/cgroup/memory.events
r io /sys/fs/cgroup/io.stat
true`

// Usage reads what the pod's container consumed from its own cgroup,
// through the executor (the host cannot see a node's cgroups). Known is
// false where the pod has no readable cgroup files (gVisor).
func (s *session) Usage(ctx context.Context) (sandbox.Usage, error) {
	if s.Client == nil {
		return sandbox.Usage{}, nil
	}
	r, err := s.Exec(ctx, sandbox.ExecRequest{Command: usageScript, Timeout: 5 * time.Second})
	if err != nil {
		return sandbox.Usage{}, fmt.Errorf("reading the pod's cgroup: %w", err)
	}
	return parseUsage(string(r.Output)), nil
}

// parseUsage reads usageScript's output.
func parseUsage(out string) sandbox.Usage {
	var u sandbox.Usage
	for _, line := range strings.Split(out, "\n") {
		tag, rest, _ := strings.Cut(line, " ")
		f := strings.Fields(rest)
		num := func(i int) int64 {
			if i >= len(f) {
				return 0
			}
			n, _ := strconv.ParseInt(f[i], 10, 64)
			return n
		}
		switch {
		case tag == "cpuacct" && len(f) == 1:
			u.Known, u.CPUSeconds = true, float64(num(0))/1e9
		case tag == "cpustat" && len(f) == 2 && f[0] == "usage_usec":
			u.Known, u.CPUSeconds = true, float64(num(1))/1e6
		case tag == "peak" && len(f) == 1:
			u.PeakMemoryBytes = num(0)
		case tag == "oom" && len(f) == 2 && f[0] == "oom_kill":
			u.OOMKills = int(num(1))
		case tag == "io":
			for _, kv := range f[1:] {
				if v, ok := strings.CutPrefix(kv, "wbytes="); ok {
					n, _ := strconv.ParseInt(v, 10, 64)
					u.BytesWritten += n
				}
			}
		}
	}
	return u
}
