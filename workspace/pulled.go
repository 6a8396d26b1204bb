package workspace

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"time"

	"github.com/agentbox/agentbox/internal/fstree"
	"golang.org/x/sys/unix"
)

// HoldPulled decides the changes a sandbox brought back into a real copy
// (Kubernetes: the pod's copy is the staging layer, and its changes are
// pulled into the copy's tree) by the same rules as promotion in rw: the
// policy's files.write rules (decide) and the built-in host hazards
// (hazard.go). A change that is not allowed is held: its content moves
// into the session's records (stage/held/<seq>/, listed by `agentbox
// changes SESSION --held`), and the tree gets the workspace's entry back,
// so the copy's change list, its review and apply never carry it. The
// result is the checkpoint of the held changes (nil when none was held,
// and for an overlay copy, whose changes the overlay's own staging
// decides). Call it once nothing runs in the sandbox any more.
func (c *Copy) HoldPulled(callID string, decide WriteDecider) (*Checkpoint, error) {
	if c.Kind == KindOverlay {
		return nil, nil
	}
	after, err := Snapshot(c.Tree())
	if err != nil {
		return nil, err
	}
	st, err := OpenStage(c.Tree(), c.Workspace, c.StageDir(), decide)
	if err != nil {
		return nil, err
	}
	st.tree = true
	l, err := st.newLister(false)
	if err != nil {
		return nil, err
	}
	defer l.Close()
	for _, ch := range Diff(c.before, after) {
		if ch.Change == ChangeIncomplete {
			continue // the change list says so itself: nothing is applied from it
		}
		stamp, ok := after.Files[ch.Path]
		if !ok {
			stamp = c.before.Files[ch.Path]
		}
		sc := StagedChange{Path: ch.Path, Change: ch.Change, Type: typeOf(stamp), Bytes: ch.Bytes, After: ch.SHA256}
		if sc.Type == TypeSymlink && sc.Change != "deleted" {
			// Read once, judged by where it resolves in the tree.
			if sc.target, err = l.up.Readlink(ch.Path); err != nil {
				sc.Held, sc.Why = HazardNotStaged, "the link could not be read: "+err.Error()
			}
		}
		l.out = append(l.out, sc)
	}
	l.decideAll()
	var held []StagedChange
	for _, sc := range l.out {
		if sc.Held != "" {
			held = append(held, sc)
		}
	}
	if len(held) == 0 {
		return nil, nil
	}
	seq := st.st.Seq + 1
	dst := filepath.Join(c.StageDir(), "held", fmt.Sprint(seq))
	root, err := os.OpenRoot(c.Tree())
	if err != nil {
		return nil, err
	}
	defer root.Close()
	for _, h := range held {
		if err := c.holdTreeEntry(root, h, dst); err != nil {
			return nil, fmt.Errorf("holding %s: %w; nothing can be applied from this copy", h.Path, err)
		}
	}
	cp := &Checkpoint{Seq: seq, CallID: callID, Time: time.Now().UTC(), Changes: held}
	st.st.Seq = seq
	if err := writeJSON(st.checkpointPath(seq), cp); err != nil {
		return nil, err
	}
	return cp, st.save()
}

// holdTreeEntry moves a held change's entry out of the tree into dst and
// puts the workspace's entry (if any) back in its place, recording its
// stamp as the copy's starting point: the tree no longer differs there.
// The tree is reached through root and only below real directories: a
// link the sandbox left in the tree is never followed.
func (c *Copy) holdTreeEntry(root *os.Root, h StagedChange, dst string) error {
	rel := filepath.FromSlash(h.Path)
	tp := filepath.Join(c.Tree(), rel)
	if err := realParents(root, h.Path); err != nil {
		return err
	}
	if _, err := root.Lstat(rel); err == nil {
		to := filepath.Join(dst, rel)
		if err := os.MkdirAll(filepath.Dir(to), 0o700); err != nil {
			return err
		}
		if err := writableParent(tp, func() error { return os.Rename(tp, to) }); err != nil {
			return err
		}
	} else if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, unix.ENOTDIR) {
		return err
	}
	delete(c.before.Files, h.Path)
	wp := filepath.Join(c.Workspace, rel)
	fi, err := os.Lstat(wp)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ENOTDIR) {
		return nil // an addition: gone from the tree
	}
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() && fi.Mode()&fs.ModeSymlink == 0 {
		return nil // not something a copy carries
	}
	if d := filepath.Dir(rel); d != "." {
		if err := root.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	err = writableParent(tp, func() error { return restoreEntry(root, rel, wp, fi) })
	if err != nil {
		return err
	}
	stamp, err := fstree.Lstat(unix.AT_FDCWD, tp)
	if err != nil {
		return err
	}
	c.before.Files[h.Path] = stamp
	return nil
}

// restoreEntry writes the workspace's entry wp (a regular file or a
// symlink) at rel below root.
func restoreEntry(root *os.Root, rel, wp string, fi fs.FileInfo) error {
	if fi.Mode()&fs.ModeSymlink != 0 {
		target, err := os.Readlink(wp)
		if err != nil {
			return err
		}
		return root.Symlink(target, rel)
	}
	in, err := os.OpenFile(wp, os.O_RDONLY|fstree.OpenNoFollow, 0)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := root.OpenFile(rel, os.O_WRONLY|os.O_CREATE|os.O_EXCL, fi.Mode().Perm())
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	if err == nil {
		err = out.Chmod(fi.Mode().Perm())
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}

// realParents checks that every directory above rel in root is a real
// directory (not a symlink the sandbox left).
func realParents(root *os.Root, rel string) error {
	for d := path.Dir(rel); d != "."; d = path.Dir(d) {
		fi, err := root.Lstat(filepath.FromSlash(d))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		if !fi.IsDir() {
			return fmt.Errorf("%s lies below %s, which is not a directory", rel, d)
		}
	}
	return nil
}

// writableParent runs fn, which changes an entry of p's directory; when
// the sandbox made that directory read-only (the tree is agentbox's own
// copy) it is opened for fn and then put back.
func writableParent(p string, fn func() error) error {
	err := fn()
	if !errors.Is(err, fs.ErrPermission) {
		return err
	}
	parent := filepath.Dir(p)
	fi, serr := os.Lstat(parent)
	if serr != nil || !fi.IsDir() {
		return err
	}
	if cerr := os.Chmod(parent, fi.Mode().Perm()|0o700); cerr != nil {
		return err
	}
	defer os.Chmod(parent, fi.Mode().Perm())
	return fn()
}
