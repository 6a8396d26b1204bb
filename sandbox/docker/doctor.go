package docker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
)

// Check is one finding of `agentbox doctor`: Err says what is wrong and
// how to fix it; else OK says what was found. A Note is informational.
type Check struct {
	Name string
	Err  error
	OK   string
	Note bool
}

// Doctor checks the engine, its runtime and cgroup limits, and the image,
// on a Runtime made by Connect.
func (d *Runtime) Doctor(ctx context.Context, image string) []Check {
	cl := d.cli
	if cl == nil {
		return []Check{{Name: "engine", Err: errors.New("no engine connection (internal: use docker.Connect)")}}
	}
	var out []Check
	out = append(out, d.engineCheck(ctx))
	info, err := cl.Info(ctx)
	if err == nil {
		out = append(out, Check{Name: "runtime", OK: fmt.Sprintf("default %s; security options %v; cgroup v%s", info.DefaultRuntime, info.SecurityOptions, info.CgroupVersion)})
		var missing []string
		for name, ok := range map[string]bool{"memory": info.MemoryLimit, "swap": info.SwapLimit, "pids": info.PidsLimit, "cpu quota": info.CPUCfsQuota} {
			if !ok {
				missing = append(missing, name)
			}
		}
		if len(missing) > 0 {
			sort.Strings(missing)
			out = append(out, Check{Name: "limits", Err: fmt.Errorf("the engine cannot enforce %s limits (cgroup support missing); sandboxes would refuse to start: enable the cgroup controllers for the engine", strings.Join(missing, ", "))})
		} else {
			out = append(out, Check{Name: "limits", OK: "memory, swap, pids and CPU quota limits are enforced"})
		}
		out = append(out, d.tierChecks(ctx, image, info)...)
		if d.HonorsRuntime(ctx) {
			// (an engine that ignores the runtime asked for runs none of
			// these: its gvisor check says so)
			out = append(out, seccompCheck(info.Runtimes))
		}
		if os.Geteuid() == 0 {
			out = append(out, Check{Name: "user", Note: true, OK: "running as root: sandboxes run as the workspace's owner, or as uid 0 with every capability dropped when root owns it"})
		}
	}
	img, err := cl.ImageInspect(ctx, image)
	if err != nil {
		out = append(out, Check{Name: "image", Err: fmt.Errorf("%s missing; build it with `agentbox image build` (or make image)", image)})
	} else {
		out = append(out, Check{Name: "image", OK: fmt.Sprintf("%s (%s, %d MB)", image, img.ID[:19], img.Size>>20)})
	}
	return out
}
