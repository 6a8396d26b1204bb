package executor

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"

	"golang.org/x/sys/unix"
)

// visitFunc sees one entry (rel to the workspace; name within dirfd) and
// says whether to descend into it (directories only).
type visitFunc func(rel string, dirfd int, name string, st *unix.Stat_t) bool

const maxDepth = 512

// walk visits every entry below the root through directory descriptors,
// never following a symlink. It stops after maxWalk entries (complete is
// then false).
func (e *effects) walk(fn visitFunc) (complete bool, err error) {
	fd, err := unix.Open(e.root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return false, err
	}
	defer unix.Close(fd)
	n := 0
	return walkDir(fd, "", fn, &n, 0)
}

func walkDir(fd int, rel string, fn visitFunc, n *int, depth int) (bool, error) {
	if depth > maxDepth {
		return false, fmt.Errorf("directories nested deeper than %d at %q", maxDepth, rel)
	}
	names, err := readNames(fd)
	if err != nil {
		return false, err
	}
	for _, name := range names {
		if *n++; *n > maxWalk {
			return false, nil
		}
		child := name
		if rel != "" {
			child = rel + "/" + name
		}
		st, err := fstatat(fd, name)
		if err != nil {
			continue // gone meanwhile
		}
		if !fn(child, fd, name, st) || st.Mode&unix.S_IFMT != unix.S_IFDIR {
			continue
		}
		cfd, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			continue // unreadable: the command could not write into it either
		}
		ok, err := walkDir(cfd, child, fn, n, depth+1)
		unix.Close(cfd)
		if !ok || err != nil {
			return ok, err
		}
	}
	return true, nil
}

// readNames lists a directory through its descriptor (from the start).
func readNames(fd int) ([]string, error) {
	if _, err := unix.Seek(fd, 0, io.SeekStart); err != nil {
		return nil, err
	}
	var names []string
	buf := make([]byte, 32<<10)
	for {
		k, err := unix.Getdents(fd, buf)
		if err != nil {
			return nil, err
		}
		if k <= 0 {
			return names, nil
		}
		_, _, names = unix.ParseDirent(buf[:k], -1, names)
	}
}

func fstatat(dirfd int, name string) (*unix.Stat_t, error) {
	var st unix.Stat_t
	if err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return nil, err
	}
	return &st, nil
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
func removeTree(dirfd int, name string) error {
	cfd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	names, err := readNames(cfd)
	if err == nil {
		for _, n := range names {
			if unix.Unlinkat(cfd, n, 0) != nil {
				_ = removeTree(cfd, n)
			}
		}
	}
	unix.Close(cfd)
	return unix.Unlinkat(dirfd, name, unix.AT_REMOVEDIR)
}

// restore puts a remembered file back in place of name (atomically).
func restore(dirfd int, name string, s snap) error {
	if st, err := fstatat(dirfd, name); err == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR {
		if err := removeTree(dirfd, name); err != nil {
			return err
		}
	}
	tmp := ".agentbox-restore-" + name
	if len(tmp) > 255 {
		tmp = tmp[:255]
	}
	_ = unix.Unlinkat(dirfd, tmp, 0)
	fd, err := unix.Openat(dirfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, s.mode&0o777)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), tmp)
	_, werr := f.Write(s.data)
	if werr == nil {
		werr = unix.Fchmod(fd, s.mode&0o777)
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
