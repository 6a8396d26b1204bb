package main

import (
	"os"

	"golang.org/x/sys/unix"
	"golang.org/x/term"
)

func isTerminal(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }

// termWidth is the terminal's width in columns (80 when unknown).
func termWidth(f *os.File) int {
	if w, _, err := term.GetSize(int(f.Fd())); err == nil && w > 0 {
		return w
	}
	return 80
}

// singleKey puts the terminal on fd into reading single keys without echo
// (signals still work: Ctrl-C interrupts) and returns how to restore it.
func singleKey(fd int) func() (restore func()) {
	return func() func() {
		old, err := unix.IoctlGetTermios(fd, unix.TCGETS)
		if err != nil {
			return func() {}
		}
		raw := *old
		raw.Lflag &^= unix.ICANON | unix.ECHO
		raw.Cc[unix.VMIN], raw.Cc[unix.VTIME] = 1, 0
		if unix.IoctlSetTermios(fd, unix.TCSETS, &raw) != nil {
			return func() {}
		}
		return func() { _ = unix.IoctlSetTermios(fd, unix.TCSETS, old) }
	}
}
