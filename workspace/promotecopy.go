package workspace

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"

	"github.com/agentbox/agentbox/internal/fstree"
	"golang.org/x/sys/unix"
)

// contentPrefix is how much of a promoted file's start the content
// decisions read (gitdir: links, git's HEAD).
const contentPrefix = max(headPrefix, gitdirPrefix)

// copyData fills out (new, empty) with in's bytes and returns their
// sha256, their count and the first contentPrefix of them. size is what
// in held when opened. A large file is reflinked where the filesystem
// can (shared blocks), else copied in the kernel (copy_file_range), and
// hashed from the copy; a small one goes through the worker's buffer
// once (read, hashed, written).
func (w *dirWork) copyData(out, in int, size int64) (sum string, n int64, prefix []byte, err error) {
	if size >= cloneMin {
		if ok, err := w.copyKernel(out, in); err != nil {
			return "", 0, nil, err
		} else if ok {
			return w.hashBack(out)
		}
	}
	h := w.h
	h.Reset()
	for {
		k, err := readFull(in, w.buf)
		if err != nil {
			return "", 0, nil, err
		}
		if k == 0 {
			break
		}
		b := w.buf[:k]
		if len(prefix) < contentPrefix {
			prefix = append(prefix, b[:min(k, contentPrefix-len(prefix))]...)
		}
		h.Write(b)
		if err := writeAll(out, b); err != nil {
			return "", 0, nil, err
		}
		n += int64(k)
		// A short read of a regular file is its end: no read for the
		// zero, unless the file is shorter than it was.
		if k < len(w.buf) && n >= size {
			break
		}
	}
	return hex.EncodeToString(h.Sum(nil)), n, prefix, nil
}

// copyKernel copies in to out without passing the bytes through the
// process: a reflink, or copy_file_range. ok is false when neither is
// possible here (nothing was written then).
func (w *dirWork) copyKernel(out, in int) (ok bool, err error) {
	if !w.p.noClone.Load() {
		if unix.IoctlFileClone(out, in) == nil {
			return true, nil
		}
		w.p.noClone.Store(true)
	}
	var total int64
	for {
		k, err := unix.CopyFileRange(in, nil, out, nil, 1<<30, 0)
		switch {
		case err == unix.EINTR:
			continue
		case err != nil && total == 0 && (errors.Is(err, unix.EXDEV) || errors.Is(err, unix.EINVAL) ||
			errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EOPNOTSUPP)):
			return false, nil // by the buffer, from the start
		case err != nil:
			return false, err
		case k == 0:
			return true, nil
		}
		total += int64(k)
	}
}

// hashBack hashes what out (the copy) holds.
func (w *dirWork) hashBack(out int) (string, int64, []byte, error) {
	h := w.h
	h.Reset()
	var n int64
	var prefix []byte
	for {
		k, err := unix.Pread(out, w.buf, n)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return "", 0, nil, err
		}
		if k == 0 {
			break
		}
		if len(prefix) < contentPrefix {
			prefix = append(prefix, w.buf[:min(k, contentPrefix-len(prefix))]...)
		}
		h.Write(w.buf[:k])
		n += int64(k)
	}
	return hex.EncodeToString(h.Sum(nil)), n, prefix, nil
}

// readFull reads into b until it is full or the file ends.
func readFull(fd int, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		k, err := unix.Read(fd, b[n:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return n, err
		}
		if k == 0 {
			break
		}
		n += k
		if n < len(b) {
			break // short: the end (the caller reads on when unsure)
		}
	}
	return n, nil
}

func writeAll(fd int, b []byte) error {
	for len(b) > 0 {
		k, err := unix.Write(fd, b)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		b = b[k:]
	}
	return nil
}

// keepBeforeAt keeps the workspace entry name in dfd as it is before
// promotion, at dst, for rewind (a hard link where it can, a copy
// otherwise; a link's text; nothing for a directory or a missing entry),
// and returns the sha256 of a file or link. mkdir makes dst's directory.
func keepBeforeAt(dfd int, name, dst string, mkdir func() error) (string, error) {
	st, err := fstree.Lstat(dfd, name)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	if !st.IsRegular() && !st.IsSymlink() {
		return "", nil
	}
	if err := mkdir(); err != nil {
		return "", err
	}
	if st.IsSymlink() {
		t, err := fstree.ReadlinkAt(dfd, name)
		if err != nil {
			return "", err
		}
		s := sha256.Sum256([]byte("symlink:" + t))
		_ = os.Remove(dst) // a leftover of a killed promotion of this checkpoint
		return hex.EncodeToString(s[:]), os.Symlink(t, dst)
	}
	err = unix.Linkat(dfd, name, unix.AT_FDCWD, dst, 0)
	if errors.Is(err, unix.EEXIST) {
		// Left by a promotion of this checkpoint that was killed before
		// it renamed this file: the workspace still has what it kept.
		_ = os.Remove(dst)
		err = unix.Linkat(dfd, name, unix.AT_FDCWD, dst, 0)
	}
	if err == nil {
		sum, _, err := hashFile(dst)
		return sum, err
	}
	in, err := openAt(dfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if err != nil {
		return "", err
	}
	f := os.NewFile(uintptr(in), name)
	defer f.Close()
	_ = os.Remove(dst) // a leftover of a killed promotion of this checkpoint
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL|unix.O_NOFOLLOW, fs.FileMode(st.Mode&0o777))
	if err != nil {
		return "", err
	}
	h := sha256.New()
	_, err = io.Copy(io.MultiWriter(out, h), f)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return hex.EncodeToString(h.Sum(nil)), err
}

// hashAt hashes the regular file name in dfd (never a link).
func hashAt(dfd int, name string) (string, int64, error) {
	fd, err := openAt(dfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if err != nil {
		return "", 0, err
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	return hashOpen(f)
}
