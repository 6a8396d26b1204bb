package docker

import (
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	"github.com/moby/profiles/seccomp"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// setIDBits are the mode bits no process of the sandbox may set: a set-id
// file left in the workspace would grant its owner's privilege on the host.
const setIDBits = unix.S_ISUID | unix.S_ISGID

// modeArg is, for every system call that sets a file's mode, the index of
// its mode argument. open's mode is only used with O_CREAT or O_TMPFILE;
// libcs pass 0 otherwise, so a masked compare on it is safe.
var modeArg = map[string]uint{
	"chmod":     1,
	"fchmod":    1,
	"fchmodat":  2,
	"fchmodat2": 2, // Linux 6.6, number 452; unknown names are skipped by the runtime and fall to the default action (refused)
	"open":      2,
	"openat":    3,
	"creat":     1,
	"mknod":     1,
	"mknodat":   2,
}

// refusedNoSys are refused with ENOSYS so that libc falls back to a call
// the filter can see: openat2 passes its mode inside a struct, clone3 its
// flags (CLONE_UNTRACED among them).
var refusedNoSys = []string{"openat2", "clone3"}

// cloneRefused are the clone flags no process of the sandbox may pass:
// CLONE_UNTRACED would start a process or thread the exec-time tracer does
// not follow, so programs it executes would escape the command rules; the
// namespace flags are the engine's own refusal (without CAP_SYS_ADMIN),
// kept because the engine's clone rules are replaced by this one.
const cloneRefused = unix.CLONE_UNTRACED | unix.CLONE_NEWNS | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC |
	unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNET | unix.CLONE_NEWCGROUP

// profiles are the two profiles, built once each: for runc and Podman,
// and for gVisor (see seccompProfile).
var profiles = [2]func() (string, error){
	sync.OnceValues(func() (string, error) { return buildProfile(false) }),
	sync.OnceValues(func() (string, error) { return buildProfile(true) }),
}

// seccompProfile returns the profile for a sandbox, gVisor's when gvisor.
//
// gVisor (as of runsc 20221219) answers every SCMP_ACT_ERRNO of an OCI
// profile with EPERM whatever its errnoRet, so the ENOSYS refusals would
// become EPERM, and glibc, which falls back from clone3 to clone only on
// ENOSYS, could not start a thread (tested: python's threading failed).
// Under gVisor those calls are therefore left to the executor's own
// filter (sandbox.Enforcement.SetIDFilter, which gVisor's kernel runs with
// the right errno), and the profile allows them.
func seccompProfile(gvisor bool) (string, error) {
	if gvisor {
		return profiles[1]()
	}
	return profiles[0]()
}

// buildProfile builds the engine's default profile (as shipped with the
// Docker module in github.com/moby/profiles) with agentbox's additions: no
// system call may set S_ISUID or S_ISGID, and no process or thread may be
// created that the exec-time tracer does not follow (cloneRules).
//
// The engine's profile allows these calls unconditionally, and an allow
// rule without arguments beats a refusing rule with arguments in the
// runtime's filter (tested: the set-uid bit was set). So the calls are
// taken out of every unconditional allow and added back as an allow when
// mode&06000 == 0 and an EPERM when either bit is set: the rules never
// overlap, whatever the runtime's precedence.
func buildProfile(gvisor bool) (string, error) {
	p := seccomp.DefaultProfile()
	remove := func(name string) bool {
		_, ok := modeArg[name]
		return ok || slices.Contains(refusedNoSys, name)
	}
	for _, sc := range p.Syscalls {
		if sc.Action == specs.ActAllow && len(sc.Args) == 0 {
			sc.Names = slices.DeleteFunc(sc.Names, remove)
		}
		// Every rule of the engine's about clone and clone3 (the
		// CAP_SYS_ADMIN allowances included) gives way to agentbox's.
		sc.Names = slices.DeleteFunc(sc.Names, func(n string) bool { return n == "clone" || n == "clone3" })
	}
	p.Syscalls = slices.DeleteFunc(p.Syscalls, func(sc *seccomp.Syscall) bool { return len(sc.Names) == 0 })
	eperm, enosys := uint(unix.EPERM), uint(unix.ENOSYS)
	names := make([]string, 0, len(modeArg))
	for n := range modeArg {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		i := modeArg[n]
		masked := func(mask, want uint64) []specs.LinuxSeccompArg {
			return []specs.LinuxSeccompArg{{Index: i, Value: mask, ValueTwo: want, Op: specs.OpMaskedEqual}}
		}
		p.Syscalls = append(p.Syscalls,
			&seccomp.Syscall{LinuxSyscall: specs.LinuxSyscall{Names: []string{n}, Action: specs.ActAllow, Args: masked(setIDBits, 0)}, Comment: "agentbox: no set-id bits"},
			&seccomp.Syscall{LinuxSyscall: specs.LinuxSyscall{Names: []string{n}, Action: specs.ActErrno, ErrnoRet: &eperm, Args: masked(unix.S_ISUID, unix.S_ISUID)}, Comment: "agentbox: set-uid refused"},
			&seccomp.Syscall{LinuxSyscall: specs.LinuxSyscall{Names: []string{n}, Action: specs.ActErrno, ErrnoRet: &eperm, Args: masked(unix.S_ISGID, unix.S_ISGID)}, Comment: "agentbox: set-gid refused"},
		)
	}
	p.Syscalls = append(p.Syscalls, cloneRules()...)
	if gvisor {
		p.Syscalls = append(p.Syscalls, &seccomp.Syscall{LinuxSyscall: specs.LinuxSyscall{Names: refusedNoSys, Action: specs.ActAllow}, Comment: "agentbox: refused with ENOSYS by the executor's own filter (gVisor)"})
	} else {
		p.Syscalls = append(p.Syscalls, &seccomp.Syscall{LinuxSyscall: specs.LinuxSyscall{Names: refusedNoSys, Action: specs.ActErrno, ErrnoRet: &enosys}, Comment: "agentbox: mode or flags not visible to the filter; libc falls back to openat and clone"})
	}
	b, err := json.Marshal(p)
	if err != nil {
		return "", fmt.Errorf("encoding the seccomp profile: %w", err)
	}
	return string(b), nil
}

// cloneRules allow clone without any flag of cloneRefused (flags are the
// first argument, the second on s390); the profile's default action
// refuses the rest.
func cloneRules() []*seccomp.Syscall {
	rule := func(index uint) specs.LinuxSyscall {
		return specs.LinuxSyscall{Names: []string{"clone"}, Action: specs.ActAllow,
			Args: []specs.LinuxSeccompArg{{Index: index, Value: cloneRefused, ValueTwo: 0, Op: specs.OpMaskedEqual}}}
	}
	s390 := []string{"s390", "s390x"}
	return []*seccomp.Syscall{
		{LinuxSyscall: rule(0), Excludes: &seccomp.Filter{Arches: s390}, Comment: "agentbox: no untraced process or thread, no namespaces"},
		{LinuxSyscall: rule(1), Includes: &seccomp.Filter{Arches: s390}, Comment: "agentbox: no untraced process or thread, no namespaces (s390 argument order)"},
	}
}
