//go:build unix

package fstree

import "syscall"

// OpenNoFollow (an os.OpenFile flag) makes opening a symlink fail and a FIFO not block.
const OpenNoFollow = syscall.O_NOFOLLOW | syscall.O_NONBLOCK
