//go:build unix

package audit

import (
	"errors"
	"os"
	"syscall"
)

// oNoFollow makes opening the log fail if its last path element is a symlink.
const oNoFollow = syscall.O_NOFOLLOW

// lockFile takes an exclusive flock(2) on f, waiting for it. flock locks
// belong to the open file description, so two Writers in one process exclude
// each other as two processes do.
func lockFile(f *os.File) error { return flockFile(f, syscall.LOCK_EX) }

// unlockFile releases the lock taken by lockFile.
func unlockFile(f *os.File) error { return flockFile(f, syscall.LOCK_UN) }

func flockFile(f *os.File, how int) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	err = rc.Control(func(fd uintptr) {
		for {
			ferr = syscall.Flock(int(fd), how)
			if !errors.Is(ferr, syscall.EINTR) {
				return
			}
		}
	})
	if err != nil {
		return err
	}
	return ferr
}
