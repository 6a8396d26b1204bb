//go:build linux

package executor

import "golang.org/x/sys/unix"

const auditArch = unix.AUDIT_ARCH_AARCH64

var modeArgs = []modeArg{
	{unix.SYS_FCHMOD, 1}, {unix.SYS_FCHMODAT, 2}, {452, 2}, // fchmodat2
	{unix.SYS_OPENAT, 3}, {unix.SYS_MKNODAT, 2},
}
