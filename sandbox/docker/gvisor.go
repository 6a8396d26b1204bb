package docker

import (
	"github.com/agentbox/agentbox/sandbox"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/go-units"
)

// GVisorRuntime is the OCI runtime name of gVisor (policy sandbox.runtime).
const GVisorRuntime = "runsc"

// Under gVisor the sandbox's processes run on gVisor's own kernel (the
// sentry), and the host sees only the sentry, its gofer and one stub
// process per address space, each with host threads of its own. So the
// pids cgroup no longer counts the sandbox's processes but the sentry's
// host tasks; a limit sized for the sandbox (256) makes the sentry panic
// ("error initializing first thread: resource temporarily unavailable")
// and the sandbox die on the first pipeline. The host limit is therefore
// scaled to bound the sentry, and the sandbox's own process count is
// bounded inside by RLIMIT_NPROC, which the sentry enforces for non-root
// users (root inside is exempt, as on Linux: a fork bomb run as root then
// exhausts the sentry's host limit and the sandbox dies, failing closed).
const (
	gvisorHostPidsPerProcess = 8
	gvisorHostPidsBase       = 256
)

// applyGVisor adapts the hardening spec to gVisor when cfg asks for it.
func applyGVisor(cfg sandbox.Config, hc *container.HostConfig) {
	if cfg.Runtime != GVisorRuntime {
		return
	}
	host := gvisorHostPidsBase + gvisorHostPidsPerProcess*cfg.Pids
	hc.PidsLimit = &host
	for _, l := range hc.Ulimits {
		if l.Name == "nproc" {
			return
		}
	}
	hc.Ulimits = append(hc.Ulimits, &units.Ulimit{Name: "nproc", Soft: cfg.Pids, Hard: cfg.Pids})
}
