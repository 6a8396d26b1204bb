package docker

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/agentbox/agentbox/sandbox"
	"github.com/docker/docker/api/types/system"
)

// engineCheck names the engine and the Docker API it speaks: "Podman 4.3.1
// (Docker API 1.41)" or "Docker 20.10.24 (Docker API 1.41)".
func (d *Runtime) engineCheck(ctx context.Context) Check {
	q, err := d.quirks(ctx)
	if err != nil {
		return Check{Name: "engine", Err: fmt.Errorf("%w; check DOCKER_HOST", err)}
	}
	return Check{Name: "engine", OK: fmt.Sprintf("%s at %s (client negotiated API %s)", q, d.cli.DaemonHost(), d.cli.ClientVersion())}
}

// tierChecks list the engine's OCI runtimes and, when gVisor's runsc is
// among them, start a sandbox under it (policy: sandbox.runtime: runsc).
// A rootless Podman is noted: its limits need cgroup v2 delegation.
func (d *Runtime) tierChecks(ctx context.Context, image string, info system.Info) []Check {
	var names []string
	for name := range info.Runtimes {
		names = append(names, name)
	}
	slices.Sort(names)
	out := []Check{{Name: "oci runtimes", OK: fmt.Sprintf("%s (default %s)", strings.Join(names, ", "), info.DefaultRuntime)}}
	if slices.Contains(info.SecurityOptions, "name=rootless") {
		note := "rootless engine: sandboxes run in a user namespace"
		if info.CgroupVersion != "2" {
			note += "; with cgroup v1 it cannot enforce limits, so sandboxes refuse to start (use cgroup v2 with delegation, or rootful)"
		}
		out = append(out, Check{Name: "rootless", Note: true, OK: note})
	}
	if _, ok := info.Runtimes[GVisorRuntime]; !ok {
		out = append(out, Check{Name: "gvisor", Note: true, OK: "runsc is not registered with the engine: sandbox.runtime: runsc would refuse to start (install gVisor and add it to the engine's runtimes)"})
		return out
	}
	if q, err := d.quirks(ctx); err == nil && q.ignoresRuntime {
		return append(out, Check{Name: "gvisor", Note: true, OK: q.Engine + "'s Docker-compatible API ignores a container's OCI runtime: sandbox.runtime is refused on this engine (use the Docker engine for runsc)"})
	}
	if _, err := d.eng.ImageInspect(ctx, image); err != nil {
		return append(out, Check{Name: "gvisor", Note: true, OK: "runsc is registered; not tried without the image"})
	}
	start := time.Now()
	err := startProbe(ctx, d, sandbox.Config{Image: image, Runtime: GVisorRuntime})
	if err != nil {
		err = fmt.Errorf("runsc is registered but cannot start a sandbox: %w", err)
	}
	return append(out, Check{Name: "gvisor", Err: err, OK: fmt.Sprintf("runsc started a hardened sandbox and ran a command in %s", time.Since(start).Round(time.Millisecond))})
}

// startProbe starts a sandbox with cfg on a fresh workspace, runs `true`
// and removes it.
func startProbe(ctx context.Context, d *Runtime, cfg sandbox.Config) error {
	ws, err := os.MkdirTemp("", "agentbox-doctor-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(ws)
	cfg.Workspace = ws
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	s, err := d.Start(ctx, cfg)
	if err != nil {
		return err
	}
	defer s.Close(context.WithoutCancel(ctx))
	res, err := s.Exec(ctx, sandbox.ExecRequest{Command: "true", Timeout: 30 * time.Second})
	if err == nil && res.ExitCode != 0 {
		err = fmt.Errorf("`true` exited %d", res.ExitCode)
	}
	return err
}
