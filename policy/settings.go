package policy

import (
	"fmt"
	"slices"
	"time"

	"github.com/agentbox/agentbox/sandbox"
)

// CompareSettings lists every field outside the command, file and network
// allow/deny rules in which n is looser than b: commands.default, dynamic
// and unknown_binaries, the network mode, network.rules, passthrough,
// upstream_ca and secrets, host variables passed in, background, user,
// image, runtime, workspace mode, limits, timeouts and audit redaction. It
// is pure; Within and the trust check for a local policy use it.
func CompareSettings(n, b *Policy) []Finding {
	var out []Finding
	add := func(field, format string, args ...any) {
		out = append(out, Finding{Field: field, What: fmt.Sprintf(format, args...)})
	}
	if n.cmd.def < b.cmd.def {
		add("commands.default", "%s (boundary: %s): commands no rule names", n.cmd.def, b.cmd.def)
	}
	if n.cmd.dynamic < b.cmd.dynamic {
		add("commands.dynamic", "%s (boundary: %s): commands known only at run time", n.cmd.dynamic, b.cmd.dynamic)
	}
	if n.cmd.unknown < b.cmd.unknown {
		add("commands.unknown_binaries", "%s (boundary: %s): programs that are not the image's executables", n.cmd.unknown, b.cmd.unknown)
	}
	ns, bs := n.Sandbox, b.Sandbox
	if netRank(ns.Network) > netRank(bs.Network) {
		add("sandbox.network", "%s (boundary: %s)", ns.Network, bs.Network)
	}
	for _, e := range ns.Env {
		if !slices.Contains(bs.Env, e) {
			add("sandbox.env", "passes the host variable %s", e)
		}
	}
	if ns.Background != bs.Background && ns.Background != "kill" {
		add("sandbox.background", "%s (boundary: %s): processes outlive the call that started them", ns.Background, bs.Background)
	}
	if ns.User != bs.User {
		add("sandbox.user", "runs as %s (boundary: %s)", userText(ns.User), userText(bs.User))
	}
	if ns.Image != bs.Image {
		add("sandbox.image", "%s (boundary: %s): another image may hold other programs", ns.Image, bs.Image)
	}
	if ns.Runtime != bs.Runtime && ns.Runtime != "runsc" {
		add("sandbox.runtime", "%s (boundary: %s)", runtimeText(ns.Runtime), runtimeText(bs.Runtime))
	}
	if wsRank(ns.Workspace) > wsRank(bs.Workspace) {
		add("sandbox.workspace", "%s (boundary: %s)", ns.Workspace, bs.Workspace)
	}
	more := func(field string, nv, bv float64, show func(float64) string) {
		if nv > bv || nv <= 0 && bv > 0 {
			add(field, "%s (boundary: %s)", show(nv), show(bv))
		}
	}
	num := func(v float64) string { return fmt.Sprint(v) }
	size := func(v float64) string { return formatSize(int64(v)) }
	dur := func(v float64) string { return time.Duration(v).String() }
	more("sandbox.limits.cpus", ns.CPUs, bs.CPUs, num)
	more("sandbox.limits.memory", float64(ns.MemoryBytes), float64(bs.MemoryBytes), size)
	more("sandbox.limits.pids", float64(ns.Pids), float64(bs.Pids), num)
	more("sandbox.limits.disk", float64(ns.DiskBytes), float64(bs.DiskBytes), size)
	if bs.DiskSet && !ns.DiskSet {
		add("sandbox.limits.disk", "not set (the boundary sets it: a session refuses to run unbounded)")
	}
	more("sandbox.timeouts.call", float64(ns.CallTimeout), float64(bs.CallTimeout), dur)
	more("sandbox.timeouts.call_max", float64(ns.CallTimeoutMax), float64(bs.CallTimeoutMax), dur)
	more("sandbox.timeouts.session", float64(ns.SessionTimeout), float64(bs.SessionTimeout), dur)
	out = append(out, compareNetExtras(n, b)...)
	kept := map[string]bool{}
	for _, re := range n.Audit.Redact {
		kept[re.String()] = true
	}
	for _, re := range b.Audit.Redact {
		if !kept[re.String()] {
			add("audit.redact", "does not redact %q", re.String())
		}
	}
	return out
}

func userText(u string) string {
	if u == "" {
		return "the invoking user"
	}
	return u
}

func runtimeText(r string) string {
	if r == "" {
		return "the engine's default runtime"
	}
	return r
}

// wsRank orders workspace modes by what the sandbox may do to the user's
// files: ro, then copy (reviewed before apply), then rw.
func wsRank(m sandbox.WorkspaceMode) int {
	switch m {
	case sandbox.WorkspaceRO:
		return 0
	case sandbox.WorkspaceCopy:
		return 1
	}
	return 2
}

// formatSize writes a byte count the way policies write it (1GiB, 512MiB).
func formatSize(b int64) string {
	for _, u := range []struct {
		n    int64
		name string
	}{{1 << 30, "GiB"}, {1 << 20, "MiB"}, {1 << 10, "KiB"}} {
		if b >= u.n && b%u.n == 0 {
			return fmt.Sprintf("%d%s", b/u.n, u.name)
		}
	}
	return fmt.Sprintf("%dB", b)
}
