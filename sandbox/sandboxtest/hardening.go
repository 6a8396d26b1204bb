package sandboxtest

import (
	"slices"
	"strings"
	"testing"
)

// Difference is how one isolation tier legitimately differs from a
// hardening check's default expectation: the value expected there, and
// why (logged with the result, so the difference stays named).
type Difference struct {
	Want   string
	Reason string
}

// hardeningCheck is one property observed from inside the sandbox: a shell
// command and the trimmed output every tier must produce unless it names a
// Difference.
type hardeningCheck struct {
	name, cmd, want string
}

// hostSecretVar is set in the test process; it must not reach the sandbox.
const hostSecretVar = "AGENTBOX_TEST_HOST_SECRET"

var hardeningChecks = []hardeningCheck{
	{"caps", `grep -E '^Cap(Eff|Prm|Bnd|Amb):' /proc/self/status | awk '{print $2}' | sort -u`, "0000000000000000"},
	// prctl(PR_GET_NO_NEW_PRIVS) rather than /proc/self/status, which
	// gVisor's does not list.
	{"nnp", `python3 -c 'import ctypes; print(ctypes.CDLL(None).prctl(39, 0, 0, 0, 0))'`, "1"},
	// /proc/net/dev rather than /sys/class/net, which gVisor lacks.
	{"net", `awk 'NR>2{sub(":", "", $1); print $1}' /proc/net/dev`, "lo"},
	{"rootfs", `touch /usr/x 2>/dev/null && echo writable || echo readonly`, "readonly"},
	{"tmp", `touch /tmp/x && echo tmp-ok`, "tmp-ok"},
	{"socket", `ls /var/run/docker.sock /run/docker.sock /run/podman/podman.sock 2>/dev/null | wc -l`, "0"},
	{"env", `env | grep -c ` + hostSecretVar + ` || true`, "0"},
	{"seccomp", `grep Seccomp: /proc/self/status | awk '{print $2}'`, "2"},
	{"mounts", `awk '$2=="/workspace"||$2=="/.agentbox/agentbox"{print $2, substr($4,1,2)}' /proc/mounts | sort`, "/.agentbox/agentbox ro\n/workspace rw"},
	{"executor", `test -w /.agentbox/agentbox && echo writable || echo readonly`, "readonly"},
	{"core-limit", `ulimit -c`, "0"},
	{"nofile-limit", `ulimit -n`, "4096"},
	// The executor is PID 1 (non-dumpable; it reaps orphans itself).
	{"init", `cat /proc/1/comm`, "agentbox"},
	{"uid-map", `awk '{print $1, $2}' /proc/self/uid_map`, "0 0"},
	{"raw-socket", `python3 -c 'import socket; socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)' 2>/dev/null && echo opened || echo refused`, "refused"},
	{"mknod", `mknod /tmp/dev c 1 3 2>/dev/null && echo made || echo refused`, "refused"},
	{"mount", `mount -t tmpfs none /tmp 2>/dev/null && echo mounted || echo refused`, "refused"},
}

// HardeningChecks names every check RunHardening makes (for tiers that
// declare differences).
func HardeningChecks() []string {
	var names []string
	for _, c := range hardeningChecks {
		names = append(names, c.name)
	}
	return names
}

// RunHardening observes the hardening defaults of docs/DESIGN.md from inside a
// sandbox. diffs names the checks whose expected value differs on this
// tier, with the reason; a difference naming no check fails the test.
func RunHardening(t *testing.T, start Start, diffs map[string]Difference) {
	for name := range diffs {
		if !slices.Contains(HardeningChecks(), name) {
			t.Fatalf("difference for unknown hardening check %q", name)
		}
	}
	t.Setenv(hostSecretVar, "host-secret-value")
	s, _ := start(t)
	for _, c := range hardeningChecks {
		want := c.want
		if d, ok := diffs[c.name]; ok {
			want = d.Want
			t.Logf("%s: expecting %q, not %q: %s", c.name, d.Want, c.want, d.Reason)
		}
		res := Exec(t, s, c.cmd, Quick)
		if got := strings.TrimSpace(string(res.Output)); got != want {
			t.Errorf("%s: got %q, want %q", c.name, got, want)
		}
	}
}
