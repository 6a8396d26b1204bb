package workspace

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path"

	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/internal/fstree"
)

// listAll lists every change of an overlay copy, decided, with its
// staging engine: the session's (with its files.write rules), or, for a
// copy opened from the store, one opened on its records (the built-in
// hazards alone; OpenStage makes the records' directory when missing,
// so the copy's state directory must be writable).
func (c *Copy) listAll() ([]StagedChange, error) {
	st := c.stage
	if st == nil {
		var err error
		if st, err = OpenStage(c.Upper(), c.Workspace, c.StageDir(), nil); err != nil {
			return nil, err
		}
	}
	return st.ListAll()
}

// scanOverlay lists what an overlay copy holds against the workspace as
// the copy's change list, read by the one reader of an upper directory
// (the staging engine's listing, every change, kept and held alike):
// files, links and special files added, modified, deleted or with a new
// mode, each with the sum apply checks. Directories are implied by their
// entries and not listed (a directory that replaced a file lists that
// file as deleted; a file that replaced a directory is added, the
// directory's entries deleted).
func (c *Copy) scanOverlay() ([]audit.FileChange, error) {
	list, err := c.listAll()
	if err != nil {
		return nil, err
	}
	up, err := fstree.OpenRoot(c.Upper())
	if err != nil {
		return nil, fmt.Errorf("reading the change set %s: %w", c.Upper(), err)
	}
	defer up.Close()
	h := hasher{max: DefaultSnapshotLimits.MaxHashBytes}
	out := make([]audit.FileChange, 0, len(list))
	for _, sc := range list {
		fc, ok := fileChange(sc)
		if !ok {
			continue
		}
		if fc.Change != audit.ChangeDeleted {
			fc.SHA256 = h.sumIn(up, sc)
		}
		out = append(out, fc)
	}
	sortChanges(out)
	if h.incomplete != "" {
		out = append(out, audit.IncompleteMarker(h.incomplete))
	}
	return out, nil
}

// fileChange is the copy's change-list entry for one staged change
// (false: a directory, implied by its entries).
func fileChange(sc StagedChange) (audit.FileChange, bool) {
	fc := audit.FileChange{Path: sc.Path, Bytes: sc.Bytes, Change: sc.Change}
	switch {
	case sc.Type != TypeDir && sc.gone && sc.Change == "modified":
		fc.Change = audit.ChangeAdded // over a directory whose entries go
	case sc.Type != TypeDir:
	case sc.Change == "modified" && sc.lowIn && !sc.low.IsDir():
		// A directory over a file: the file goes.
		fc.Change, fc.Bytes = audit.ChangeDeleted, sc.low.Size
	default:
		return fc, false
	}
	return fc, true
}

// sumIn is the sum of a staged entry in the upper directory root (a link:
// of its target as listed), "" past the bound (the list is then
// incomplete) or when it cannot be read.
func (h *hasher) sumIn(root *fstree.Root, sc StagedChange) string {
	switch {
	case sc.unread != "":
		return "" // changed while listed: no sum (apply refuses it)
	case sc.Type == TypeSymlink:
		s := sha256.Sum256([]byte("symlink:" + sc.target))
		return hex.EncodeToString(s[:])
	case sc.Type != TypeFile:
		return ""
	}
	return h.bounded(sc.Bytes, func() (string, int64, error) { return hashIn(root, sc.Path) })
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
