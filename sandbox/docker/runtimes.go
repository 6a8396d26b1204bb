package docker

import (
	"fmt"
	"path/filepath"
	"slices"
	"sort"

	"github.com/docker/docker/api/types/system"
)

// ignoresSeccomp names the registered OCI runtimes that do not apply the
// container's seccomp profile: gVisor's runsc ignores it unless it is
// registered with --oci-seccomp (it filters system calls for itself, not
// for the sandboxed program). Under such a runtime nothing stops a command
// from setting S_ISUID or S_ISGID on workspace files (tested): only the
// executor's check after each call clears them.
func ignoresSeccomp(runtimes map[string]system.RuntimeWithStatus) []string {
	var out []string
	for name, r := range runtimes {
		if filepath.Base(r.Path) == "runsc" && !slices.Contains(r.Args, "--oci-seccomp") && !slices.Contains(r.Args, "--oci-seccomp=true") {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// seccompCheck is the doctor finding about runtimes that ignore seccomp.
func seccompCheck(runtimes map[string]system.RuntimeWithStatus) Check {
	bad := ignoresSeccomp(runtimes)
	if len(bad) == 0 {
		return Check{Name: "seccomp", OK: "every registered runtime applies agentbox's seccomp profile (no set-id bits)"}
	}
	// A note, not a failure: only policies choosing that runtime are
	// affected, and the default runtime is not.
	return Check{Name: "seccomp", Note: true, OK: fmt.Sprintf("runtime %v ignores the container's seccomp profile: a sandbox using it can set set-uid/set-gid bits on workspace files (cleared only after each call); register it with runtimeArgs [\"--oci-seccomp\"] in the engine's daemon.json", bad)}
}
