package workspace

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/internal/fstree"
)

// Change kinds beside audit's added, modified and deleted.
const (
	// ChangeMode: only the permission bits changed.
	ChangeMode = "mode"
	// ChangeIncomplete marks a change list that misses changes: a bound
	// was reached. It is always the last entry; its Path says why.
	ChangeIncomplete = audit.ChangeIncomplete
)

// ErrIncomplete: the change list misses changes, so nothing is applied.
var ErrIncomplete = errors.New("the change list is incomplete")

// Counted is changes without the incomplete marker.
func Counted(changes []audit.FileChange) []audit.FileChange {
	out := make([]audit.FileChange, 0, len(changes))
	for _, c := range changes {
		if c.Change != ChangeIncomplete {
			out = append(out, c)
		}
	}
	return out
}

// hasher hashes changed entries up to a total byte bound.
type hasher struct {
	max        int64
	done       int64
	incomplete string
}

// sum is the sha256 of the entry at p (a symlink: of "symlink:"+target),
// or "" when it is not a regular file or symlink, cannot be read, or the
// bound is reached (which makes the list incomplete: apply checks sums).
func (h *hasher) sum(p string, st Stat) string {
	switch {
	case st.IsSymlink():
		target, err := os.Readlink(p)
		if err != nil {
			return ""
		}
		s := sha256.Sum256([]byte("symlink:" + target))
		return hex.EncodeToString(s[:])
	case !st.IsRegular():
		return ""
	}
	return h.bounded(st.Size, func() (string, int64, error) { return hashFile(p) })
}

// bounded hashes a regular file of size bytes with hash, "" past the
// bound (the list is then incomplete) or when it cannot be read.
func (h *hasher) bounded(size int64, hash func() (string, int64, error)) string {
	if h.done+size > h.max {
		if h.incomplete == "" {
			h.incomplete = fmt.Sprintf("more than %d MiB of changed files to hash", h.max>>20)
		}
		return ""
	}
	sum, n, err := hash()
	if err != nil {
		return ""
	}
	h.done += n
	return sum
}

// hashFile hashes the regular file p, refusing to follow a symlink or
// block on a FIFO that replaced it.
func hashFile(p string) (string, int64, error) {
	f, err := os.OpenFile(p, os.O_RDONLY|fstree.OpenNoFollow, 0)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	return hashOpen(f)
}

// hashOpen hashes the open file f, which must be a regular file.
func hashOpen(f *os.File) (string, int64, error) {
	fi, err := f.Stat()
	if err != nil {
		return "", 0, err
	}
	if !fi.Mode().IsRegular() {
		return "", 0, errors.New("not a regular file")
	}
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return "", 0, err
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}
