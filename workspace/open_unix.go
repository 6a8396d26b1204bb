//go:build unix

package workspace

import "syscall"

// OpenNoFollow (an os.OpenFile flag) makes opening a symlink fail and a FIFO not block.
const OpenNoFollow = syscall.O_NOFOLLOW | syscall.O_NONBLOCK
