package docker_test

import (
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/testutil"
	"github.com/agentbox/agentbox/sandbox/sandboxtest"
)

// gvisorDiffs are what the hardening checks see differently under gVisor
// (runsc), each with the reason it is not a weakness.
var gvisorDiffs = map[string]sandboxtest.Difference{
	"mknod": {Want: "made", Reason: "gVisor lets a process create device nodes in its own tmpfs; they name gVisor's emulated devices (here its /dev/null), never a host device"},
}

// gvisorLimits are the conformance cases where gVisor ends the sandbox
// instead of the command.
var gvisorLimits = sandboxtest.Options{FailsClosed: map[string]string{
	"fork-bomb":  "root inside is exempt from RLIMIT_NPROC, and the pids cgroup counts the sentry's host threads: a fork bomb run as root exhausts it and the sentry stops (as a non-root user the bomb meets RLIMIT_NPROC: TestGVisorForkBombNonRoot)",
	"memory-hog": "the sandbox's memory is the sentry's: past the memory limit the host OOM-kills the sentry, so the whole sandbox ends, never just the command",
}}

// podmanDiffs are what the hardening checks see differently under rootful
// Podman (none today).
var podmanDiffs = map[string]sandboxtest.Difference{}

// TestTiers runs the hardening suite and the conformance suite (which
// includes the timeout that must kill the whole process tree: double
// fork, setsid, nohup, trapped TERM) under every isolation tier: runc and
// gVisor's runsc on the Docker engine, and rootful Podman through its
// Docker-compatible API. No container of any tier is left behind.
func TestTiers(t *testing.T) {
	for _, tr := range testutil.Tiers(t) {
		t.Run(tr.Name, func(t *testing.T) {
			tr.Require(t)
			var diffs map[string]sandboxtest.Difference
			var opts sandboxtest.Options
			switch {
			case tr.GVisor:
				diffs, opts = gvisorDiffs, gvisorLimits
			case tr.Podman:
				diffs = podmanDiffs
			}
			t.Run("Hardening", func(t *testing.T) { sandboxtest.RunHardening(t, tr.Starter, diffs) })
			if tr.Name != "runc" { // runc runs it in TestDockerConformance
				t.Run("Conformance", func(t *testing.T) { sandboxtest.RunWith(t, tr.Starter, opts) })
			}
			if tr.Podman {
				t.Run("Engine", func(t *testing.T) { podmanEngine(t, tr) })
			}
			t.Run("NoLeftovers", func(t *testing.T) {
				if left := tr.Leftovers(t); len(left) > 0 {
					t.Errorf("containers left behind on %s: %v", tr.Name, left)
				}
			})
		})
	}
}

// Under gVisor a non-root sandbox's processes are bounded by RLIMIT_NPROC
// (set from the policy's pids limit): a fork bomb fails and the sandbox
// survives it.
func TestGVisorForkBombNonRoot(t *testing.T) {
	tr := &testutil.Tier{Name: "runsc", Runtime: "runsc", Client: testutil.RequireDocker(t), GVisor: true, User: "65534:65534"}
	if !testutil.HasRuntime(t, tr.Client, "runsc") {
		return
	}
	s, _ := tr.Starter(t)
	sandboxtest.Exec(t, s, "bomb(){ bomb | bomb & }; bomb", 5*time.Second)
	after := sandboxtest.Exec(t, s, "echo alive; ulimit -u", 10*time.Second)
	if got := strings.Fields(string(after.Output)); len(got) != 2 || got[0] != "alive" || got[1] != "128" {
		t.Fatalf("after the fork bomb: %q", after.Output)
	}
}
