package executor

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// setIDBits are the mode bits no process of the sandbox may set.
const setIDBits = unix.S_ISUID | unix.S_ISGID

// cloneRefused are the clone flags no process of the sandbox may pass (the
// same as the Docker profile's): CLONE_UNTRACED would start a process or
// thread the tracer does not follow; namespaces are the runtime's refusal.
const cloneRefused = unix.CLONE_UNTRACED | unix.CLONE_NEWNS | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC |
	unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNET | unix.CLONE_NEWCGROUP

// installSetIDFilter installs, on every thread of this process (and so on
// every process it starts from now on), agentbox's addition to the
// runtime's seccomp profile: no system call may set
// S_ISUID or S_ISGID (the chmod family, and file creation with those
// bits, get EPERM); openat2, which hides its mode in a struct, gets ENOSYS
// so that libc falls back to openat; no process or thread may be created
// that the exec-time tracer does not follow (clone with CLONE_UNTRACED, or
// a namespace flag, gets EPERM; clone3, whose flags are in a struct,
// ENOSYS so that libc falls back to clone); system calls of another architecture
// than the executor's get EPERM (their numbers would dodge the filter).
// A backend whose runtime cannot load agentbox's profile (Kubernetes: the
// node's RuntimeDefault) asks for it in the hello.
func installSetIDFilter() error {
	if len(modeArgs) == 0 {
		return fmt.Errorf("the set-id filter is not available on this architecture")
	}
	const (
		ldW  = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeq  = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		jset = unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K
		ret  = unix.BPF_RET | unix.BPF_K
	)
	allow := uint32(unix.SECCOMP_RET_ALLOW)
	eperm := uint32(unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM))
	enosys := uint32(unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS))
	prog := []unix.SockFilter{
		{Code: ldW, K: 4}, // seccomp_data.arch
		{Code: jeq, K: auditArch, Jt: 1},
		{Code: ret, K: eperm},
		{Code: ldW, K: 0}, // seccomp_data.nr
		{Code: unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K, K: 0x40000000, Jf: 1}, // x32's numbers
		{Code: ret, K: eperm},
		{Code: jeq, K: unix.SYS_OPENAT2, Jf: 1},
		{Code: ret, K: enosys},
		{Code: jeq, K: unix.SYS_CLONE3, Jf: 1},
		{Code: ret, K: enosys},
		// nr == clone ? (flags & cloneRefused ? EPERM : ALLOW) : next
		{Code: jeq, K: unix.SYS_CLONE, Jf: 4},
		{Code: ldW, K: 16}, // seccomp_data.args[0], low word: the flags on amd64 and arm64
		{Code: jset, K: cloneRefused, Jf: 1},
		{Code: ret, K: eperm},
		{Code: ret, K: allow},
	}
	for _, m := range modeArgs {
		// nr == m.nr ? (low word of args[m.arg] & 06000 ? EPERM : ALLOW) : next
		prog = append(prog,
			unix.SockFilter{Code: jeq, K: m.nr, Jf: 4},
			unix.SockFilter{Code: ldW, K: 16 + 8*m.arg}, // seccomp_data.args[i], low word (little-endian)
			unix.SockFilter{Code: jset, K: setIDBits, Jf: 1},
			unix.SockFilter{Code: ret, K: eperm},
			unix.SockFilter{Code: ret, K: allow},
		)
	}
	prog = append(prog, unix.SockFilter{Code: ret, K: allow})
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	if _, _, errno := unix.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&fprog))); errno != 0 {
		return fmt.Errorf("installing the set-id filter: %w", errno)
	}
	return nil
}

// modeArg is a system call that sets a file's mode, and the index of its
// mode argument.
type modeArg struct{ nr, arg uint32 }
