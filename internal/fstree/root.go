package fstree

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// ErrLinkInPath: a symbolic link (or something else that is not a
// directory) stands where a Root path needs a directory. Root never
// follows it, not even when it stays inside.
var ErrLinkInPath = errors.New("a symbolic link or non-directory is in the way (never followed)")

// Root is a directory opened once, below which every path is resolved
// without following any symbolic link: each directory on the way is
// opened with openat2(RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS), or, where the
// kernel lacks openat2, component by component with O_NOFOLLOW. The last
// component of a path is never followed either (its operations are the
// *at system calls with no-follow semantics). Unlike os.Root, a link that
// stays inside is not followed: a sandbox that shaped the tree cannot
// steer an operation to another place in it. Paths are slash-separated,
// relative, and may not contain "..".
type Root struct {
	fd   int
	name string
}

// OpenRoot opens the directory dir (a symbolic link at dir itself is not
// followed).
func OpenRoot(dir string) (*Root, error) {
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: dir, Err: err}
	}
	return &Root{fd: fd, name: dir}, nil
}

// Close releases the root's descriptor.
func (r *Root) Close() error { return unix.Close(r.fd) }

// Name is the path the root was opened with.
func (r *Root) Name() string { return r.name }

// Fd is the root's descriptor (an O_PATH directory), valid until Close.
func (r *Root) Fd() int { return r.fd }

// clean checks rel and returns its components ("." and "" = the root).
func clean(rel string) ([]string, error) {
	if rel == "" || rel == "." {
		return nil, nil
	}
	if path.IsAbs(rel) {
		return nil, fmt.Errorf("%q is not a relative path", rel)
	}
	var out []string
	for _, c := range strings.Split(rel, "/") {
		switch c {
		case "", ".":
			continue
		case "..":
			return nil, fmt.Errorf("%q has a .. component", rel)
		}
		out = append(out, c)
	}
	return out, nil
}

var noOpenat2 bool

// openDir opens the directory made of comps below r (O_PATH).
func (r *Root) openDir(comps []string) (int, error) {
	if len(comps) == 0 {
		return unix.Openat(r.fd, ".", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	}
	if !noOpenat2 {
		fd, err := unix.Openat2(r.fd, strings.Join(comps, "/"), &unix.OpenHow{
			Flags:   unix.O_PATH | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC,
			Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
		})
		switch {
		case err == nil:
			return fd, nil
		case errors.Is(err, unix.ENOSYS):
			noOpenat2 = true // an old kernel: the component walk below
		case errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR):
			return -1, ErrLinkInPath
		default:
			return -1, err
		}
	}
	cur := r.fd
	for i, c := range comps {
		fd, err := unix.Openat(cur, c, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if cur != r.fd {
			unix.Close(cur)
		}
		if err != nil {
			if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
				err = ErrLinkInPath
			}
			return -1, fmt.Errorf("%s: %w", strings.Join(comps[:i+1], "/"), err)
		}
		cur = fd
	}
	return cur, nil
}

// OpenDir opens the directory rel below r as an O_PATH descriptor (usable
// as the dirfd of *at calls); the caller closes it.
func (r *Root) OpenDir(rel string) (int, error) {
	comps, err := clean(rel)
	if err != nil {
		return -1, err
	}
	fd, err := r.openDir(comps)
	if err != nil {
		return -1, &fs.PathError{Op: "open", Path: rel, Err: err}
	}
	return fd, nil
}

// ReadDirFd opens the directory rel below r for reading (getdents, a
// walk); the caller closes it.
func (r *Root) ReadDirFd(rel string) (int, error) {
	pfd, base, err := r.Parent(rel)
	if err != nil {
		return -1, err
	}
	defer unix.Close(pfd)
	if base == "" {
		base = "."
	}
	fd, err := unix.Openat(pfd, base, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ELOOP) {
			err = ErrLinkInPath
		}
		return -1, &fs.PathError{Op: "open", Path: rel, Err: err}
	}
	return fd, nil
}

// Parent opens the directory holding rel and returns it with rel's last
// component ("" for the root itself); the caller closes the descriptor.
func (r *Root) Parent(rel string) (int, string, error) {
	comps, err := clean(rel)
	if err != nil {
		return -1, "", err
	}
	if len(comps) == 0 {
		fd, err := r.openDir(nil)
		return fd, "", err
	}
	fd, err := r.openDir(comps[:len(comps)-1])
	if err != nil {
		return -1, "", &fs.PathError{Op: "open", Path: rel, Err: err}
	}
	return fd, comps[len(comps)-1], nil
}

// at runs fn on rel's parent descriptor and last component.
func (r *Root) at(op, rel string, fn func(dfd int, name string) error) error {
	dfd, name, err := r.Parent(rel)
	if err != nil {
		return err
	}
	defer unix.Close(dfd)
	if name == "" {
		name = "."
	}
	if err := fn(dfd, name); err != nil {
		return &fs.PathError{Op: op, Path: rel, Err: err}
	}
	return nil
}

// Stat is the Stamp of rel (a final link not followed).
func (r *Root) Stat(rel string) (Stamp, error) {
	var st Stamp
	err := r.at("lstat", rel, func(dfd int, name string) error {
		var e error
		st, e = Lstat(dfd, name)
		return e
	})
	return st, err
}

// Lstat is Stat as an fs.FileInfo.
func (r *Root) Lstat(rel string) (fs.FileInfo, error) {
	var fi fs.FileInfo
	err := r.at("lstat", rel, func(dfd int, name string) error {
		var st unix.Stat_t
		if err := unix.Fstatat(dfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return err
		}
		fi = &fileInfo{name: path.Base(rel), st: syscall.Stat_t{Dev: st.Dev, Ino: st.Ino, Nlink: st.Nlink, Mode: st.Mode,
			Uid: st.Uid, Gid: st.Gid, Rdev: st.Rdev, Size: st.Size, Blksize: st.Blksize, Blocks: st.Blocks,
			Atim: syscall.Timespec(st.Atim), Mtim: syscall.Timespec(st.Mtim), Ctim: syscall.Timespec(st.Ctim)}}
		return nil
	})
	return fi, err
}

// Readlink reads the link rel.
func (r *Root) Readlink(rel string) (string, error) {
	var t string
	err := r.at("readlink", rel, func(dfd int, name string) error {
		var e error
		t, e = ReadlinkAt(dfd, name)
		return e
	})
	return t, err
}

// ReadlinkAt reads the link name below dirfd, however long its target.
func ReadlinkAt(dirfd int, name string) (string, error) {
	for n := 256; ; n *= 2 {
		buf := make([]byte, n)
		k, err := unix.Readlinkat(dirfd, name, buf)
		if err != nil {
			return "", err
		}
		if k < n {
			return string(buf[:k]), nil
		}
	}
}

// Symlink creates the link rel with target (never read or followed).
func (r *Root) Symlink(target, rel string) error {
	return r.at("symlink", rel, func(dfd int, name string) error { return unix.Symlinkat(target, dfd, name) })
}

// Mkdir creates the directory rel.
func (r *Root) Mkdir(rel string, perm fs.FileMode) error {
	return r.at("mkdir", rel, func(dfd int, name string) error { return unix.Mkdirat(dfd, name, uint32(perm.Perm())) })
}

// MkdirAll creates rel and the directories above it that are missing; a
// link (or file) in the way fails with ErrLinkInPath.
func (r *Root) MkdirAll(rel string, perm fs.FileMode) error {
	comps, err := clean(rel)
	if err != nil {
		return err
	}
	cur, err := r.openDir(nil)
	if err != nil {
		return err
	}
	for i, c := range comps {
		if err := unix.Mkdirat(cur, c, uint32(perm.Perm())); err != nil && !errors.Is(err, unix.EEXIST) {
			unix.Close(cur)
			return &fs.PathError{Op: "mkdir", Path: strings.Join(comps[:i+1], "/"), Err: err}
		}
		fd, err := unix.Openat(cur, c, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		unix.Close(cur)
		if err != nil {
			if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
				err = ErrLinkInPath
			}
			return &fs.PathError{Op: "mkdir", Path: strings.Join(comps[:i+1], "/"), Err: err}
		}
		cur = fd
	}
	unix.Close(cur)
	return nil
}

// Remove removes the entry rel: a file, a link or an empty directory.
func (r *Root) Remove(rel string) error {
	return r.at("remove", rel, func(dfd int, name string) error {
		err := unix.Unlinkat(dfd, name, 0)
		if errors.Is(err, unix.EISDIR) || errors.Is(err, unix.EPERM) {
			if st, e := Lstat(dfd, name); e == nil && st.IsDir() {
				return unix.Unlinkat(dfd, name, unix.AT_REMOVEDIR)
			}
		}
		return err
	})
}

// RemoveAll removes rel and everything below it (never following a link).
func (r *Root) RemoveAll(rel string) error {
	return r.at("removeall", rel, func(dfd int, name string) error { return RemoveAll(dfd, name) })
}

// Rename renames oldRel to newRel (both below r).
func (r *Root) Rename(oldRel, newRel string) error {
	ofd, oname, err := r.Parent(oldRel)
	if err != nil {
		return err
	}
	defer unix.Close(ofd)
	nfd, nname, err := r.Parent(newRel)
	if err != nil {
		return err
	}
	defer unix.Close(nfd)
	if err := unix.Renameat(ofd, oname, nfd, nname); err != nil {
		return &os.LinkError{Op: "rename", Old: oldRel, New: newRel, Err: err}
	}
	return nil
}

// Chmod sets the permission bits of rel, which must not be a link.
func (r *Root) Chmod(rel string, mode fs.FileMode) error {
	return r.at("chmod", rel, func(dfd int, name string) error {
		fd, err := unix.Openat(dfd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			return err
		}
		if st.Mode&unix.S_IFMT == unix.S_IFLNK {
			return ErrLinkInPath
		}
		return unix.Chmod(fmt.Sprintf("/proc/self/fd/%d", fd), uint32(mode.Perm()))
	})
}

// OpenFile opens rel (O_NOFOLLOW is always added: a link there fails).
func (r *Root) OpenFile(rel string, flag int, perm fs.FileMode) (*os.File, error) {
	var f *os.File
	err := r.at("open", rel, func(dfd int, name string) error {
		fd, err := unix.Openat(dfd, name, flag|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(perm.Perm()))
		if err != nil {
			return err
		}
		f = os.NewFile(uintptr(fd), path.Join(r.name, rel))
		return nil
	})
	return f, err
}

// Open opens rel for reading (O_NONBLOCK: a FIFO does not block).
func (r *Root) Open(rel string) (*os.File, error) {
	return r.OpenFile(rel, os.O_RDONLY|unix.O_NONBLOCK, 0)
}

// Link makes newPath (any path, resolved as usual) a hard link of rel.
func (r *Root) Link(rel, newPath string) error {
	return r.at("link", rel, func(dfd int, name string) error { return unix.Linkat(dfd, name, unix.AT_FDCWD, newPath, 0) })
}

type fileInfo struct {
	name string
	st   syscall.Stat_t
}

func (f *fileInfo) Name() string       { return f.name }
func (f *fileInfo) Size() int64        { return f.st.Size }
func (f *fileInfo) Mode() fs.FileMode  { return FromFileInfo(f).FileMode() }
func (f *fileInfo) ModTime() time.Time { return time.Unix(0, f.st.Mtim.Nano()) }
func (f *fileInfo) IsDir() bool        { return f.st.Mode&unix.S_IFMT == unix.S_IFDIR }
func (f *fileInfo) Sys() any           { return &f.st }
