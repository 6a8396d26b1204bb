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
// the filter can see: openat2 passes its mode inside a struct.
var refusedNoSys = []string{"openat2"}

var (
	profileOnce sync.Once
	profileJSON string
	profileErr  error
)

// seccompProfile is the engine's default profile (as shipped with the
// Docker module in github.com/moby/profiles) with agentbox's additions: no
// system call may set S_ISUID or S_ISGID.
//
// The engine's profile allows these calls unconditionally, and an allow
// rule without arguments beats a refusing rule with arguments in the
// runtime's filter (tested: the set-uid bit was set). So the calls are
// taken out of every unconditional allow and added back as an allow when
// mode&06000 == 0 and an EPERM when either bit is set: the rules never
// overlap, whatever the runtime's precedence.
func seccompProfile() (string, error) {
	profileOnce.Do(func() {
		p := seccomp.DefaultProfile()
		remove := func(name string) bool {
			_, ok := modeArg[name]
			return ok || slices.Contains(refusedNoSys, name)
		}
		for _, sc := range p.Syscalls {
			if sc.Action == specs.ActAllow && len(sc.Args) == 0 {
				sc.Names = slices.DeleteFunc(sc.Names, remove)
			}
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
		p.Syscalls = append(p.Syscalls, &seccomp.Syscall{LinuxSyscall: specs.LinuxSyscall{Names: refusedNoSys, Action: specs.ActErrno, ErrnoRet: &enosys}, Comment: "agentbox: mode not visible to the filter; libc falls back to openat"})
		b, err := json.Marshal(p)
		if err != nil {
			profileErr = fmt.Errorf("encoding the seccomp profile: %w", err)
			return
		}
		profileJSON = string(b)
	})
	return profileJSON, profileErr
}
