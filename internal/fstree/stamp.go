// Package fstree is agentbox's one tree walker, used on the host
// (workspace snapshots and staging), in the pod (sandbox/transfer) and in
// the executor. It walks through directory descriptors (openat, fstatat),
// never follows a symbolic link, and never stops silently: a bound that is
// reached, or a directory that cannot be read, makes the walk Incomplete
// with the reason. Stamp is the one record of an entry and Changed the one
// rule that says whether it changed (the ctime counts: a program can set
// the mtime back, not the ctime).
//
// It depends on the standard library and golang.org/x/sys only, so the
// static executor links it.
package fstree

import (
	"io/fs"
	"syscall"

	"golang.org/x/sys/unix"
)

// Stamp is what tells whether an entry changed: any write, chmod, chown,
// rename or replacement changes at least one of these.
type Stamp struct {
	Ino   uint64 `json:"ino"`
	Dev   uint64 `json:"dev"`
	Mode  uint32 `json:"mode"` // st_mode: type and permission bits
	Size  int64  `json:"size"`
	MTime int64  `json:"mtime"`          // ns
	CTime int64  `json:"ctime"`          // ns
	Rdev  uint64 `json:"rdev,omitempty"` // a device node's device (0/0 character device: an overlay whiteout)
}

// StampOf takes the Stamp of a stat result.
func StampOf(st *unix.Stat_t) Stamp {
	return Stamp{Ino: st.Ino, Dev: uint64(st.Dev), Mode: st.Mode, Size: st.Size, Rdev: uint64(st.Rdev),
		MTime: unix.TimespecToNsec(st.Mtim), CTime: unix.TimespecToNsec(st.Ctim)}
}

// Type is the file type bits (unix.S_IFMT) of the mode.
func (s Stamp) Type() uint32 { return s.Mode & unix.S_IFMT }

// IsDir reports a directory.
func (s Stamp) IsDir() bool { return s.Type() == unix.S_IFDIR }

// IsRegular reports a regular file.
func (s Stamp) IsRegular() bool { return s.Type() == unix.S_IFREG }

// IsSymlink reports a symbolic link.
func (s Stamp) IsSymlink() bool { return s.Type() == unix.S_IFLNK }

// Special reports a FIFO, socket or device node.
func (s Stamp) Special() bool {
	switch s.Type() {
	case unix.S_IFIFO, unix.S_IFSOCK, unix.S_IFCHR, unix.S_IFBLK:
		return true
	}
	return false
}

// Whiteout reports an overlay whiteout: a character device 0/0.
func (s Stamp) Whiteout() bool { return s.Type() == unix.S_IFCHR && s.Rdev == 0 }

// FileMode is the mode as io/fs spells it.
func (s Stamp) FileMode() fs.FileMode {
	mode := fs.FileMode(s.Mode & 0o777)
	switch s.Type() {
	case unix.S_IFDIR:
		mode |= fs.ModeDir
	case unix.S_IFLNK:
		mode |= fs.ModeSymlink
	case unix.S_IFIFO:
		mode |= fs.ModeNamedPipe
	case unix.S_IFSOCK:
		mode |= fs.ModeSocket
	case unix.S_IFCHR:
		mode |= fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFBLK:
		mode |= fs.ModeDevice
	}
	if s.Mode&unix.S_ISUID != 0 {
		mode |= fs.ModeSetuid
	}
	if s.Mode&unix.S_ISGID != 0 {
		mode |= fs.ModeSetgid
	}
	if s.Mode&unix.S_ISVTX != 0 {
		mode |= fs.ModeSticky
	}
	return mode
}

// Changed is the one rule for "did this entry change from a to b?": a
// different identity (inode, device), type or mode always counts; for
// anything but a directory so does its size, mtime or ctime. A
// directory's own size and times change with its entries, which are
// judged one by one.
func Changed(a, b Stamp) bool {
	if a.Ino != b.Ino || a.Dev != b.Dev || a.Mode != b.Mode {
		return true
	}
	if a.IsDir() {
		return false
	}
	return a.Size != b.Size || a.MTime != b.MTime || a.CTime != b.CTime || a.Rdev != b.Rdev
}

// ModeOnly reports a change of the permission bits alone: the same
// regular file (identity, size, mtime) with another mode.
func ModeOnly(a, b Stamp) bool {
	return a.IsRegular() && b.IsRegular() && a.Ino == b.Ino && a.Dev == b.Dev &&
		a.Size == b.Size && a.MTime == b.MTime && a.Mode != b.Mode
}

// Lstat is the Stamp of the entry name below dirfd (unix.AT_FDCWD: a
// path), not following a final symbolic link.
func Lstat(dirfd int, name string) (Stamp, error) {
	var st unix.Stat_t
	if err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return Stamp{}, err
	}
	return StampOf(&st), nil
}

// FromFileInfo is the Stamp of an os.Lstat result (only size and mtime
// when it carries no stat data).
func FromFileInfo(fi fs.FileInfo) Stamp {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return Stamp{Size: fi.Size(), MTime: fi.ModTime().UnixNano()}
	}
	return Stamp{Ino: st.Ino, Dev: uint64(st.Dev), Mode: st.Mode, Size: st.Size, Rdev: uint64(st.Rdev),
		MTime: st.Mtim.Nano(), CTime: st.Ctim.Nano()}
}
