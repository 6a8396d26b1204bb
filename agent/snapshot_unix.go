//go:build unix

package agent

import "syscall"

// openNoFollow makes opening a symlink fail and a FIFO not block.
const openNoFollow = syscall.O_NOFOLLOW | syscall.O_NONBLOCK
