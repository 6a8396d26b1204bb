package docker

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/agentbox/agentbox/sandbox"
)

var _ sandbox.UsageReporter = (*dockerSession)(nil)

// cgroupRoot is where the host mounts its cgroups (tests replace it).
var cgroupRoot = "/sys/fs/cgroup"

// Usage reads the container's cgroup (v1 or v2) through its main
// process, on the engine's host when that is this host; otherwise the
// usage is not Known.
func (s *dockerSession) Usage(ctx context.Context) (sandbox.Usage, error) {
	st, err := s.rt.eng.ContainerInspect(ctx, s.containerID())
	if err != nil {
		return sandbox.Usage{}, fmt.Errorf("%w: inspecting the container: %w", sandbox.ErrUnavailable, err)
	}
	if st.State == nil || st.State.Pid <= 0 {
		return sandbox.Usage{}, nil
	}
	paths, err := cgroupPaths(fmt.Sprintf("/proc/%d/cgroup", st.State.Pid))
	if err != nil {
		return sandbox.Usage{}, nil // not on this host (or gone)
	}
	return readUsage(paths), nil
}

// cgroupPaths maps each controller (v1) or "" (v2) to its directory.
func cgroupPaths(procFile string) (map[string]string, error) {
	f, err := os.Open(procFile)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[1] == "" {
			out[""] = filepath.Join(cgroupRoot, parts[2])
			if _, err := os.Stat(filepath.Join(cgroupRoot, "cgroup.controllers")); err != nil {
				out[""] = filepath.Join(cgroupRoot, "unified", parts[2]) // hybrid
			}
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			out[c] = filepath.Join(cgroupRoot, parts[1], parts[2])
		}
	}
	return out, sc.Err()
}

// readUsage reads the figures from the cgroup files, v1 first.
func readUsage(p map[string]string) sandbox.Usage {
	var u sandbox.Usage
	if d, ok := p["cpuacct"]; ok {
		if ns, err := readInt(filepath.Join(d, "cpuacct.usage")); err == nil {
			u.Known, u.CPUSeconds = true, float64(ns)/1e9
		}
	}
	if d, ok := p["memory"]; ok {
		if v, err := readInt(filepath.Join(d, "memory.max_usage_in_bytes")); err == nil {
			u.Known, u.PeakMemoryBytes = true, v
		}
		u.OOMKills = int(keyed(filepath.Join(d, "memory.oom_control"), "oom_kill"))
	}
	if d, ok := p["blkio"]; ok {
		u.BytesWritten = sumWrites(filepath.Join(d, "blkio.throttle.io_service_bytes"))
	}
	if d, ok := p[""]; ok && !u.Known {
		if us := keyed(filepath.Join(d, "cpu.stat"), "usage_usec"); us > 0 {
			u.Known, u.CPUSeconds = true, float64(us)/1e6
		}
		if v, err := readInt(filepath.Join(d, "memory.peak")); err == nil {
			u.Known, u.PeakMemoryBytes = true, v
		}
		u.OOMKills = int(keyed(filepath.Join(d, "memory.events"), "oom_kill"))
		u.BytesWritten = ioWritten(filepath.Join(d, "io.stat"))
	}
	return u
}

func readInt(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
}

// keyed is the value of "key N" in a flat-keyed cgroup file (0 missing).
func keyed(path, key string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == key {
			n, _ := strconv.ParseInt(f[1], 10, 64)
			return n
		}
	}
	return 0
}

// sumWrites adds the "MAJ:MIN Write N" lines of a v1 blkio file.
func sumWrites(path string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	var n int64
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[1] == "Write" {
			v, _ := strconv.ParseInt(f[2], 10, 64)
			n += v
		}
	}
	return n
}

// ioWritten adds the wbytes= of a v2 io.stat.
func ioWritten(path string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	var n int64
	for _, f := range strings.Fields(string(b)) {
		if v, ok := strings.CutPrefix(f, "wbytes="); ok {
			x, _ := strconv.ParseInt(v, 10, 64)
			n += x
		}
	}
	return n
}
