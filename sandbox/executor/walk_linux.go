package executor

import (
	"errors"
	"io"
	"os"
	"path"
	"strings"

	"github.com/agentbox/agentbox/internal/fstree"
	"golang.org/x/sys/unix"
)

// visitFunc sees one entry and says whether to descend into it
// (directories only).
type visitFunc = fstree.Visit

// walk visits every entry below the root with the one tree walker
// (directory descriptors, never following a symlink, no depth limit). It
// stops after maxWalk entries: complete is then false, and why says so.
func (e *effects) walk(fn visitFunc) (complete bool, why string, err error) {
	res, err := fstree.Walk(e.root, fstree.Options{MaxEntries: maxWalk}, fn)
	if err != nil {
		return false, "", err
	}
	return res.Incomplete == "", res.Incomplete, nil
}

func fstatat(dirfd int, name string) (snap, error) {
	st, err := fstree.Lstat(dirfd, name)
	return snap{Stamp: st}, err
}

func readAt(dirfd int, name string, size int64) ([]byte, error) {
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, size+1))
	if err == nil && int64(len(b)) != size {
		err = errors.New("the file changed while it was copied")
	}
	return b, err
}

// removeTree removes name below dirfd, a directory with all its entries.
func removeTree(dirfd int, name string) error { return fstree.RemoveAll(dirfd, name) }

// restore puts a remembered file back in place of name (atomically).
func restore(dirfd int, name string, s snap) error {
	if st, err := fstatat(dirfd, name); err == nil && st.IsDir() {
		if err := removeTree(dirfd, name); err != nil {
			return err
		}
	}
	tmp := ".agentbox-restore-" + name
	if len(tmp) > 255 {
		tmp = tmp[:255]
	}
	_ = unix.Unlinkat(dirfd, tmp, 0)
	fd, err := unix.Openat(dirfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, s.Mode&0o777)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), tmp)
	_, werr := f.Write(s.data)
	if werr == nil {
		werr = unix.Fchmod(fd, s.Mode&0o777)
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = unix.Renameat(dirfd, tmp, dirfd, name)
	}
	if werr != nil {
		_ = unix.Unlinkat(dirfd, tmp, 0)
	}
	return werr
}

// restorePath restores rel below root, recreating missing directories.
func restorePath(root, rel string, s snap) error {
	fd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	dir, name := path.Split(rel)
	for _, seg := range strings.Split(strings.Trim(dir, "/"), "/") {
		if seg == "" {
			continue
		}
		_ = unix.Mkdirat(fd, seg, 0o755)
		nfd, err := unix.Openat(fd, seg, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		unix.Close(fd)
		if err != nil {
			return err
		}
		fd = nfd
	}
	defer unix.Close(fd)
	return restore(fd, name, s)
}
