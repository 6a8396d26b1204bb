package workspace

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentbox/agentbox/audit"
)

// ErrConflict: the source changed since it was copied; nothing was applied.
var ErrConflict = errors.New("the workspace changed while the agent worked on its copy")

// WorkCopy is a private copy of a workspace for one run
// (`agentbox run --workspace-mode copy`).
type WorkCopy struct {
	Src    string // the workspace
	Dir    string // the copy the sandbox mounts
	Before Snap   // the copy right after copying, equal to Src then
	parent string
}

// NewWorkCopy copies src to a new temporary directory and snapshots it.
func NewWorkCopy(src string) (*WorkCopy, error) {
	parent, err := os.MkdirTemp("", "agentbox-copy-")
	if err != nil {
		return nil, fmt.Errorf("workspace copy: %w", err)
	}
	wc := &WorkCopy{Src: src, Dir: filepath.Join(parent, "workspace"), parent: parent}
	if err := CopyTree(src, wc.Dir, 0); err != nil {
		_ = os.RemoveAll(parent)
		return nil, fmt.Errorf("workspace copy: %w", err)
	}
	if wc.Before, err = Snapshot(wc.Dir); err != nil {
		_ = os.RemoveAll(parent)
		return nil, err
	}
	return wc, nil
}

// Apply carries the copy's changes over to Src (see the function Apply).
func (wc *WorkCopy) Apply(changes []audit.FileChange) error {
	return Apply(wc.Src, wc.Dir, wc.Before, changes)
}

// Remove deletes the copy.
func (wc *WorkCopy) Remove() error { return os.RemoveAll(wc.parent) }

// Apply carries the changes a session made in copyDir over to src
// (`agentbox run --workspace-mode copy --apply`). before is the snapshot of
// copyDir taken right after the copy, when it equalled src. Every change
// is checked first: if src's version of a changed path is no longer what
// was copied (edited, created or deleted meanwhile), nothing is applied and
// the error lists the conflicts. Writes go through an os.Root on src, so no
// symlink can lead them outside it.
func Apply(src, copyDir string, before Snap, changes []audit.FileChange) error {
	cur, err := Snapshot(src)
	if err != nil {
		return err
	}
	var conflicts []string
	for _, c := range changes {
		b, inBefore := before.Files[c.Path]
		n, inNow := cur.Files[c.Path]
		if inBefore != inNow || inBefore && (b.SHA256 != n.SHA256 || b.Size != n.Size) {
			conflicts = append(conflicts, c.Path)
		}
	}
	if len(conflicts) > 0 {
		return fmt.Errorf("%w: %s; nothing was applied (the changes stay in %s)", ErrConflict, strings.Join(conflicts, ", "), copyDir)
	}
	root, err := os.OpenRoot(src)
	if err != nil {
		return err
	}
	defer root.Close()
	from, err := os.OpenRoot(copyDir)
	if err != nil {
		return err
	}
	defer from.Close()
	for _, c := range changes {
		if err := applyOne(root, from, c); err != nil {
			return fmt.Errorf("applying %s: %w (the changes stay in %s)", c.Path, err, copyDir)
		}
	}
	return nil
}

// applyOne applies one change, reading the copy through its own root (no
// symlink leads out of it) and checking that the bytes are the ones the
// change recorded.
func applyOne(root, from *os.Root, c audit.FileChange) error {
	if c.Change == audit.ChangeDeleted {
		if err := root.Remove(c.Path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	fi, err := from.Lstat(c.Path)
	if err != nil {
		return err
	}
	if dir := filepath.Dir(c.Path); dir != "." {
		if err := root.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	tmp := c.Path + ".agentbox-apply"
	_ = root.Remove(tmp)
	if fi.Mode()&fs.ModeSymlink != 0 {
		target, err := from.Readlink(c.Path)
		if err != nil {
			return err
		}
		if err := root.Symlink(target, tmp); err != nil {
			return err
		}
		return root.Rename(tmp, c.Path)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("not a regular file (%s)", fi.Mode().Type())
	}
	in, err := from.Open(c.Path)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, fi.Mode().Perm())
	if err != nil {
		return err
	}
	sum := sha256.New()
	_, err = io.Copy(io.MultiWriter(out, sum), in)
	if err == nil && c.SHA256 != "" && hex.EncodeToString(sum.Sum(nil)) != c.SHA256 {
		err = errors.New("the file changed in the copy after the run ended")
	}
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = root.Rename(tmp, c.Path)
	}
	if err != nil {
		_ = root.Remove(tmp)
	}
	return err
}
