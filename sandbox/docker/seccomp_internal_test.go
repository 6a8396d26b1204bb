package docker

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/moby/profiles/seccomp"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// The profile allows clone only without CLONE_UNTRACED (and without
// namespaces), whatever the engine's rules said; clone3 is answered ENOSYS
// (runc, Podman) or left to the executor's filter (gVisor).
func TestProfileCloneRules(t *testing.T) {
	for _, gvisor := range []bool{false, true} {
		src, err := seccompProfile(gvisor)
		if err != nil {
			t.Fatal(err)
		}
		var p seccomp.Seccomp
		if err := json.Unmarshal([]byte(src), &p); err != nil {
			t.Fatal(err)
		}
		var clone, clone3 []*seccomp.Syscall
		for _, sc := range p.Syscalls {
			if slices.Contains(sc.Names, "clone") {
				clone = append(clone, sc)
			}
			if slices.Contains(sc.Names, "clone3") {
				clone3 = append(clone3, sc)
			}
		}
		for _, sc := range clone {
			if sc.Action != specs.ActAllow || len(sc.Args) != 1 || sc.Args[0].Op != specs.OpMaskedEqual ||
				sc.Args[0].Value&unix.CLONE_UNTRACED == 0 || sc.Args[0].ValueTwo != 0 || sc.Includes != nil && len(sc.Includes.Caps) > 0 {
				t.Errorf("gvisor=%v: clone rule lets CLONE_UNTRACED through: %+v", gvisor, sc)
			}
		}
		if len(clone) != 2 || len(clone3) != 1 {
			t.Fatalf("gvisor=%v: clone rules %d, clone3 rules %d", gvisor, len(clone), len(clone3))
		}
		want := specs.ActErrno
		if gvisor {
			want = specs.ActAllow
		}
		if c := clone3[0]; c.Action != want || !gvisor && (c.ErrnoRet == nil || *c.ErrnoRet != uint(unix.ENOSYS)) {
			t.Errorf("gvisor=%v: clone3 rule %+v", gvisor, c)
		}
	}
}
