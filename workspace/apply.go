package workspace

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/internal/fstree"
)

// ErrConflict: the workspace changed since the session started, where the
// session changed it too; nothing was applied.
var ErrConflict = errors.New("the workspace changed while the agent worked on its copy")

// ErrGuarded: the changes touch files the host runs; nothing was applied.
var ErrGuarded = errors.New("apply refuses to write files the host runs")

// ErrNotPending: the copy was applied or discarded already, or is running.
var ErrNotPending = errors.New("the session has no pending changes")

// Apply carries the copy's recorded changes over to its workspace, unless
// the change list is incomplete or the workspace changed meanwhile where
// the session changed it (then nothing is applied). The copy's data is
// removed afterwards; its record stays as applied until gc.
func (c *Copy) Apply() error {
	if c.State != StatePending {
		return fmt.Errorf("%w: session %s is %s", ErrNotPending, c.Session, c.State)
	}
	if held, err := c.Hazards(); err != nil {
		return err
	} else if len(held) > 0 {
		var names []string
		for _, h := range held {
			names = append(names, h.Path+" ("+h.Held+": "+h.Why+")")
		}
		return fmt.Errorf("%w: %s; nothing was applied: review them (agentbox changes %s) and copy them by hand if you trust them, or discard the session", ErrGuarded, strings.Join(names, ", "), c.Session)
	}
	if err := ApplyChanges(c.Workspace, c.ChangedRoot(), c.Kind == KindOverlay, c.Since, c.Meta.Changes); err != nil {
		return fmt.Errorf("%w (the changes stay in %s)", err, c.Root)
	}
	c.State = StateApplied
	if err := c.save(); err != nil {
		return err
	}
	return c.removeData()
}

// ApplyChanges applies changes, read from the directory from (which holds
// each changed file at its path: an overlay upper directory, or a whole
// copy), to the workspace src. since is the
// filesystem clock when the session started: an entry of src the session
// changed that was itself changed (ctime) at or after it, deleted, or
// created meanwhile is a conflict, and nothing is applied. Both trees are
// reached through descriptors that never follow a link (not even one
// that stays inside): a link in the workspace where a change goes stops
// the apply there, or is replaced by the change itself; each file's bytes
// are checked against the recorded sum. Nothing apply did not write is
// removed or overwritten but the changed paths themselves.
func ApplyChanges(src, from string, overlay bool, since int64, changes []audit.FileChange) error {
	if why := audit.Incomplete(changes); why != "" {
		return fmt.Errorf("%w (%s); nothing was applied: review the copy by hand", ErrIncomplete, why)
	}
	if g := guarded(changes); len(g) > 0 {
		return fmt.Errorf("%w: %s would run on the host (git config or hooks, .envrc); nothing was applied: review them and copy them by hand if you trust them", ErrGuarded, strings.Join(g, ", "))
	}
	root, err := fstree.OpenRoot(src)
	if err != nil {
		return fmt.Errorf("opening the workspace: %w", err)
	}
	defer root.Close()
	if conflicts := findConflicts(root, since, changes); len(conflicts) > 0 {
		return fmt.Errorf("%w: %s; nothing was applied", ErrConflict, strings.Join(conflicts, ", "))
	}
	fromRoot, err := fstree.OpenRoot(from)
	if err != nil {
		return fmt.Errorf("opening the copy: %w", err)
	}
	defer fromRoot.Close()
	for _, c := range changes {
		if err := applyOne(root, fromRoot, overlay, c); err != nil {
			return fmt.Errorf("applying %s: %w", c.Path, err)
		}
	}
	return nil
}

// findConflicts lists the changed paths whose workspace entry changed at
// or after since.
func findConflicts(root *fstree.Root, since int64, changes []audit.FileChange) []string {
	var out []string
	for _, c := range changes {
		fi, err := root.Lstat(c.Path)
		exists := err == nil
		switch {
		case exists && StatOf(fi).CTime >= since:
			out = append(out, c.Path+" (changed in the workspace)")
		case c.Change == audit.ChangeAdded && exists:
			out = append(out, c.Path+" (created in the workspace)")
		case c.Change != audit.ChangeAdded && !exists:
			out = append(out, c.Path+" (deleted in the workspace)")
		case c.Change == audit.ChangeAdded && dirChanged(root, c.Path, since):
			// A file the session edited may have been deleted in the
			// workspace meanwhile: its directory tells.
			out = append(out, c.Path+" (its directory changed in the workspace)")
		}
	}
	return out
}

// dirChanged reports whether the nearest existing directory above p was
// changed (an entry added, removed or renamed) at or after since.
func dirChanged(root *fstree.Root, p string, since int64) bool {
	for d := path.Dir(p); ; d = path.Dir(d) {
		if fi, err := root.Lstat(d); err == nil {
			return StatOf(fi).CTime >= since
		}
		if d == "." {
			return false
		}
	}
}

// applyOne applies one change, reading the copy through its own root and
// checking that the bytes are the ones the change recorded.
func applyOne(root, from *fstree.Root, overlay bool, c audit.FileChange) error {
	if c.Change == audit.ChangeDeleted {
		if err := root.Remove(c.Path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		removeGoneParents(root, from, overlay, c.Path)
		return nil
	}
	fi, err := from.Lstat(c.Path)
	if err != nil {
		return err
	}
	if dir := path.Dir(c.Path); dir != "." {
		if err := root.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	tmp := applyTmp(c.Path)
	if fi.Mode()&fs.ModeSymlink != 0 {
		target, err := from.Readlink(c.Path)
		if err != nil {
			return err
		}
		if err := root.Symlink(target, tmp); err != nil {
			return err
		}
		if err := replace(root, tmp, c.Path); err != nil {
			_ = root.Remove(tmp)
			return err
		}
		return nil
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("not a regular file (%s)", fi.Mode().Type())
	}
	in, err := from.OpenFile(c.Path, os.O_RDONLY|fstree.OpenNoFollow, 0)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	sum := sha256.New()
	_, err = io.Copy(io.MultiWriter(out, sum), in)
	if err == nil && c.SHA256 != "" && hex.EncodeToString(sum.Sum(nil)) != c.SHA256 {
		err = errors.New("the file changed in the copy after the session ended")
	}
	if err == nil {
		err = out.Chmod(fi.Mode().Perm())
	}
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = replace(root, tmp, c.Path)
	}
	if err != nil {
		_ = root.Remove(tmp)
	}
	return err
}

// replace renames tmp over p; a directory at p (the session replaced a
// directory by a file; its entries are deleted by their own changes) is
// removed first, only when empty: what else is in it stays, and the
// rename then fails.
func replace(root *fstree.Root, tmp, p string) error {
	if fi, err := root.Lstat(p); err == nil && fi.IsDir() {
		_ = root.Remove(p)
	}
	return root.Rename(tmp, p)
}

// applyTmp is a temporary name beside rel that nothing else uses: it is
// created exclusively, so a file of the user's by that name is never
// removed or overwritten.
func applyTmp(rel string) string {
	dir, name := path.Split(rel)
	t := fmt.Sprintf(".%s.agentbox-apply-%d-%d", name, os.Getpid(), tmpSeq.Add(1))
	if len(t) > 255 {
		t = t[len(t)-255:]
	}
	return dir + t
}

var tmpSeq atomic.Int64

// removeGoneParents removes the directories above a deleted entry that
// the session removed too (a whiteout in an overlay, absent from a whole
// copy) once they are empty.
func removeGoneParents(root, from *fstree.Root, overlay bool, p string) {
	top := ""
	for d := path.Dir(p); d != "."; d = path.Dir(d) {
		fi, err := from.Lstat(d)
		if overlay && err == nil && isWhiteout(fi) || !overlay && errors.Is(err, fs.ErrNotExist) {
			top = d
		}
	}
	if top == "" {
		return
	}
	for d := path.Dir(p); root.Remove(d) == nil && d != top; d = path.Dir(d) {
	}
}

// isWhiteout reports whether fi is an overlay whiteout (a 0/0 character device).
func isWhiteout(fi fs.FileInfo) bool {
	if fi.Mode()&fs.ModeCharDevice == 0 {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && st.Rdev == 0
}
