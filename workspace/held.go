package workspace

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"

	"github.com/agentbox/agentbox/internal/fstree"
	"golang.org/x/sys/unix"
)

// scrubDirName is where held entries go on their way out of the upper
// directory: beside it, on the same filesystem (its disk image included).
const scrubDirName = "scrub"

// hold takes every held change out of the sandbox's reach and keeps a
// copy in held/<seq>/ for review (a held parent takes its entries along).
//
// Moving an entry out of the upper directory is not enough: the kernel
// overlay keeps the sandbox's cached lookups pointing at the moved inode,
// so a process in the sandbox could still read and write it wherever it
// went (held/ included). So the entry is renamed out of the upper
// directory (atomic: the next lookup no longer finds it), copied to
// held/, and the original is scrubbed: its files cut to nothing (unless
// another name still links them) and removed. A cached lookup then finds
// an empty, deleted file or a deleted directory; whatever it writes there
// reaches nothing.
func (p *promoter) hold() error {
	up, err := fstree.OpenRoot(p.s.Upper)
	if err != nil {
		return fmt.Errorf("holding the refused changes: %w", err)
	}
	defer up.Close()
	dst := filepath.Join(p.s.State, "held", fmt.Sprint(p.cp.Seq))
	moved := map[string]bool{}
	for i, c := range p.cp.Changes {
		if c.Held == "" || insideMoved(c.Path, moved) {
			continue
		}
		st, err := up.Lstat(c.Path)
		if err != nil {
			continue // a deletion below a deleted directory: nothing in upper
		}
		if isWhiteout(st) || c.Change == "deleted" {
			// The deletion is held: the sandbox sees the workspace entry
			// again (overlay looks a removed name up afresh).
			err := up.Remove(c.Path)
			if err != nil && !goneSinceListed(err) && !errors.Is(err, unix.ENOTEMPTY) && !errors.Is(err, unix.EISDIR) {
				return fmt.Errorf("holding %s: %w", c.Path, err)
			}
			// Not removed: the sandbox made a new entry there since the
			// listing (a kept process); it stays staged, and the next
			// listing decides it.
			if err == nil {
				p.s.unseal(c.Path) // the sandbox sees the workspace's again
			}
			continue
		}
		err = p.s.scrubOut(up, c.Path, filepath.Join(dst, filepath.FromSlash(c.Path)), fmt.Sprintf("%d-%d", p.cp.Seq, i))
		if goneSinceListed(err) {
			// Gone, or its directory replaced, since the listing (a kept
			// process): nothing of it is left to hold; whatever is at the
			// name now stays staged for the next listing.
			moved[c.Path] = true
			delete(p.s.st.Kept, c.Path)
			continue
		}
		if err != nil {
			return fmt.Errorf("holding %s: %w", c.Path, err)
		}
		moved[c.Path] = true
		// Out of the upper directory: the sandbox sees the workspace's
		// entry again (what it replaced a directory with included), or,
		// below a sealed directory, nothing at all.
		p.s.unseal(c.Path)
		p.s.holdOut(c.Path)
		// What the sandbox last saw promoted here stays recorded: the
		// workspace still has it, and the next change at this name is
		// judged against it (not as a conflict with agentbox's own write).
		delete(p.s.st.Kept, c.Path)
	}
	return nil
}

// goneSinceListed: err says the upper entry is no longer at its name
// (removed, or a directory above it replaced), not that it could not be
// moved.
func goneSinceListed(err error) bool { return err != nil && noEntry(err) }

// scrubOut renames the upper entry rel to scrub/<tag>, copies it to keep
// (for review; a copy that fails leaves the record's list only), then
// cuts and removes the renamed original.
func (s *Stage) scrubOut(up *fstree.Root, rel, keep, tag string) error {
	scrub := filepath.Join(filepath.Dir(s.Upper), scrubDirName)
	if err := os.Mkdir(scrub, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	sfd, err := unix.Open(scrub, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(sfd)
	parent := path.Dir(rel)
	pd, err := up.OpenDir(parent)
	if err != nil {
		return fmt.Errorf("%s is no longer a directory in the staging layer: %w", parent, err)
	}
	defer unix.Close(pd)
	_ = fstree.RemoveAll(sfd, tag) // a leftover of a killed agentbox
	if err := unix.Renameat(pd, path.Base(rel), sfd, tag); err != nil {
		return err
	}
	// The copies kept for review are bounded per session: a sandbox that
	// writes a held file to its disk bound on every call would otherwise
	// fill the host's disk through held/.
	if n := treeBytes(filepath.Join(scrub, tag)); s.st.HeldBytes+n <= heldCopyBudget {
		if err := os.MkdirAll(filepath.Dir(keep), 0o700); err == nil && keepCopy(sfd, tag, filepath.Join(scrub, tag), keep) == nil {
			s.st.HeldBytes += n
		}
	}
	cutAt(sfd, tag)
	if _, err := fstree.Walk(filepath.Join(scrub, tag), fstree.Options{}, func(e *fstree.Entry) bool {
		if e.IsRegular() {
			cutAt(e.Dirfd, e.Name)
		}
		return true
	}); err != nil && !errors.Is(err, fstree.ErrNotDir) {
		return err
	}
	// A process in the sandbox writing through a cached lookup can keep
	// the directory from going: what it writes there stays in scrub/,
	// which nothing promotes, and goes with the session.
	_ = fstree.RemoveAll(sfd, tag)
	return nil
}

// keepCopy copies the scrubbed entry tag (at path p) to keep: a regular
// file or a symlink in process (the common case, no fork), anything else
// with cp -a, which copies links as links and never follows one.
func keepCopy(sfd int, tag, p, keep string) error {
	var st unix.Stat_t
	if err := unix.Fstatat(sfd, tag, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return err
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFLNK:
		buf := make([]byte, unix.PathMax)
		n, err := unix.Readlinkat(sfd, tag, buf)
		if err != nil {
			return err
		}
		return os.Symlink(string(buf[:n]), keep)
	case unix.S_IFREG:
		fd, err := unix.Openat(sfd, tag, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		in := os.NewFile(uintptr(fd), p)
		defer in.Close()
		out, err := os.OpenFile(keep, os.O_WRONLY|os.O_CREATE|os.O_EXCL, os.FileMode(st.Mode&0o777))
		if err != nil {
			return err
		}
		_, err = io.CopyN(out, in, st.Size) // what it held when renamed out
		if errors.Is(err, io.EOF) {
			err = nil // cut meanwhile by a writer in the sandbox: what was there
		}
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		return err
	}
	return exec.Command("cp", "-a", "--reflink=auto", "--", p, keep).Run()
}

// cutAt truncates the regular file name in dirfd to nothing and takes
// every permission off it, unless another name links it (a name the
// sandbox still uses, promoted on its own). Symlinks are never followed.
func cutAt(dirfd int, name string) {
	fd, err := unix.Openat(dirfd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || st.Nlink != 1 {
		return
	}
	proc := fmt.Sprintf("/proc/self/fd/%d", fd)
	_ = unix.Chmod(proc, 0o600) // the owner may cut it then
	if w, err := unix.Open(proc, unix.O_WRONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0); err == nil {
		_ = unix.Ftruncate(w, 0)
		unix.Close(w)
	}
	_ = unix.Chmod(proc, 0)
}

// heldCopyBudget bounds what a session's held copies (kept for review)
// take on the host's disk; past it, held changes are listed only.
const heldCopyBudget = 256 << 20

// treeBytes adds up the sizes of the regular files at and below p
// (symlinks not followed).
func treeBytes(p string) int64 {
	st, err := fstree.Lstat(unix.AT_FDCWD, p)
	if err != nil || !st.IsDir() {
		return st.Size
	}
	var n int64
	_, _ = fstree.Walk(p, fstree.Options{}, func(e *fstree.Entry) bool {
		if e.IsRegular() {
			n += e.Size
		}
		return true
	})
	return n
}

// removeScrub removes what scrubbing left (once the sandbox is gone).
func removeScrub(upper string) {
	_ = RemoveTree(filepath.Join(filepath.Dir(upper), scrubDirName))
}
