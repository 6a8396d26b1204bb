package workspace

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"syscall"

	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/internal/fstree"
	"golang.org/x/sys/unix"
)

// ScanUpper lists the changes an overlay upper directory holds against its
// lower directory (the workspace): files added, edited, deleted (whiteouts,
// opaque directories, a directory replaced by a file), mode changes and
// symlink changes. Entries copied up without a change that matters (only
// their times) are not listed. Its cost follows the size of upper (the
// changes), plus the lower subtrees that were deleted. Both trees are read
// through descriptors that never follow a link.
func ScanUpper(upper, lower string) ([]audit.FileChange, error) {
	up, err := fstree.OpenRoot(upper)
	if err != nil {
		return nil, fmt.Errorf("reading the change set %s: %w", upper, err)
	}
	defer up.Close()
	low, err := fstree.OpenRoot(lower)
	if err != nil {
		return nil, fmt.Errorf("reading the workspace %s: %w", lower, err)
	}
	defer low.Close()
	s := &upperScan{up: up, low: low, upperDir: upper, seen: map[string]bool{}, h: hasher{max: DefaultSnapshotLimits.MaxHashBytes}}
	err = filepath.WalkDir(upper, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("reading the change set: %w", err)
		}
		if p == upper {
			return nil
		}
		rel := relSlash(upper, p)
		fi, err := d.Info()
		if err != nil {
			return fmt.Errorf("reading the change set: %w", err)
		}
		return s.entry(rel, fi)
	})
	if err != nil {
		return nil, err
	}
	sortChanges(s.out)
	if s.h.incomplete != "" {
		s.out = append(s.out, audit.IncompleteMarker(s.h.incomplete))
	}
	return s.out, nil
}

type upperScan struct {
	up, low  *fstree.Root
	upperDir string
	seen     map[string]bool
	out      []audit.FileChange
	h        hasher
}

func (s *upperScan) add(c audit.FileChange) {
	if s.seen[c.Path] {
		return
	}
	s.seen[c.Path] = true
	s.out = append(s.out, c)
}

func (s *upperScan) entry(rel string, fi fs.FileInfo) error {
	lfi, lerr := s.low.Lstat(rel)
	inLower := lerr == nil
	if lerr != nil && !noEntry(lerr) {
		return fmt.Errorf("reading the workspace: %w", lerr)
	}
	switch {
	case isWhiteout(fi):
		if inLower {
			return s.deleteLower(rel, lfi)
		}
		return nil
	case fi.IsDir():
		if !inLower {
			return nil
		}
		if !lfi.IsDir() {
			s.add(audit.FileChange{Path: rel, Bytes: lfi.Size(), Change: audit.ChangeDeleted})
			return nil
		}
		if s.opaque(rel) {
			return s.deleteHidden(rel)
		}
		return nil
	}
	st := StatOf(fi)
	c := audit.FileChange{Path: rel, Bytes: fi.Size()}
	switch {
	case !inLower:
		c.Change = audit.ChangeAdded
	case lfi.IsDir():
		if err := s.deleteLower(rel, lfi); err != nil {
			return err
		}
		c.Change = audit.ChangeAdded
	default:
		c.Change = s.compare(rel, fi, lfi)
	}
	if c.Change == "" {
		return nil
	}
	c.SHA256 = s.h.sum(filepath.Join(s.upperDir, filepath.FromSlash(rel)), st)
	s.add(c)
	return nil
}

// compare classifies an upper entry against the lower one at the same path.
func (s *upperScan) compare(rel string, fi, lfi fs.FileInfo) string {
	if fi.Mode().Type() != lfi.Mode().Type() {
		return audit.ChangeModified
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		a, _ := s.up.Readlink(rel)
		b, _ := s.low.Readlink(rel)
		if a != b {
			return audit.ChangeModified
		}
		return ""
	}
	if !fi.Mode().IsRegular() {
		return audit.ChangeModified
	}
	if fi.Size() != lfi.Size() || !sameContent(s.up, s.low, rel) {
		return audit.ChangeModified
	}
	if fi.Mode() != lfi.Mode() {
		return ChangeMode
	}
	return ""
}

// deleteLower lists the lower entry rel (and, for a directory, every entry
// below it) as deleted.
func (s *upperScan) deleteLower(rel string, lfi fs.FileInfo) error {
	if !lfi.IsDir() {
		s.add(audit.FileChange{Path: rel, Bytes: lfi.Size(), Change: audit.ChangeDeleted})
		return nil
	}
	return s.walkLower(rel, func(p string, e *fstree.Entry) {
		s.add(audit.FileChange{Path: p, Bytes: e.Size, Change: audit.ChangeDeleted})
	})
}

// walkLower calls fn for every non-directory below the workspace
// directory rel (through descriptors, no link followed).
func (s *upperScan) walkLower(rel string, fn func(p string, e *fstree.Entry)) error {
	fd, err := s.low.ReadDirFd(rel)
	if err != nil {
		return fmt.Errorf("reading the workspace: %w", err)
	}
	defer unix.Close(fd)
	res, err := fstree.WalkFd(fd, fstree.Options{Sorted: true}, func(e *fstree.Entry) bool {
		if !e.IsDir() {
			fn(rel+"/"+e.Rel, e)
		}
		return true
	})
	if err == nil && res.Incomplete != "" {
		err = errors.New(res.Incomplete)
	}
	if err != nil {
		return fmt.Errorf("reading the workspace below %s: %w", rel, err)
	}
	return nil
}

// deleteHidden lists the lower entries below the opaque directory rel that
// upper does not hold again as deleted.
func (s *upperScan) deleteHidden(rel string) error {
	return s.walkLower(rel, func(p string, e *fstree.Entry) {
		ufi, uerr := s.up.Lstat(p)
		if uerr == nil && !ufi.IsDir() && !isWhiteout(ufi) {
			return // listed by the upper walk
		}
		s.add(audit.FileChange{Path: p, Bytes: e.Size, Change: audit.ChangeDeleted})
	})
}

// opaque reports whether the upper directory rel hides the lower one
// (overlay's opaque xattr, user.* with userxattr, trusted.* otherwise).
func (s *upperScan) opaque(rel string) bool {
	p := filepath.Join(s.upperDir, filepath.FromSlash(rel))
	buf := make([]byte, 8)
	for _, name := range []string{"user.overlay.opaque", "trusted.overlay.opaque"} {
		if n, err := unix.Lgetxattr(p, name, buf); err == nil && n > 0 && (buf[0] == 'y' || buf[0] == 'x') {
			return true
		}
	}
	return false
}

// isWhiteout reports whether fi is an overlay whiteout (a 0/0 character device).
func isWhiteout(fi fs.FileInfo) bool {
	if fi.Mode()&fs.ModeCharDevice == 0 {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && st.Rdev == 0
}

// sameContent compares the regular file rel in both roots byte for byte.
func sameContent(a, b *fstree.Root, rel string) bool {
	ha, _, err := hashIn(a, rel)
	if err != nil {
		return false
	}
	hb, _, err := hashIn(b, rel)
	return err == nil && ha == hb
}

// hashIn hashes the regular file rel below root.
func hashIn(root *fstree.Root, rel string) (string, int64, error) {
	f, err := root.OpenFile(path.Clean(rel), os.O_RDONLY|fstree.OpenNoFollow, 0)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	return hashOpen(f)
}
