package workspace

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/agentbox/agentbox/internal/fstree"
	"golang.org/x/sys/unix"
)

// ErrRewindConflict: a path the rewind would restore changed in the
// workspace since agentbox promoted it; nothing was restored.
var ErrRewindConflict = errors.New("the workspace changed since these changes were promoted")

// Rewound is what a rewind did.
type Rewound struct {
	To       int      // the workspace is as before this checkpoint
	Restored []string // paths put back, in the order restored
}

// Rewind restores the workspace to what it was before the checkpoint of
// call (a call id, or a checkpoint number; "" = the last checkpoint),
// undoing every later checkpoint too, newest first. Its cost follows the
// changes undone: each promoted file is put back from its before-image
// (atomically), each added one removed. It checks everything first: a
// path changed in the workspace since its promotion refuses the whole
// rewind (ErrRewindConflict), and nothing is written. The undone
// checkpoints move to rewound/.
func (s *Stage) Rewind(call string) (*Rewound, error) {
	cps, err := s.Checkpoints()
	if err != nil {
		return nil, err
	}
	from := -1
	for i, cp := range cps {
		if call == "" && i == len(cps)-1 || cp.CallID == call || strconv.Itoa(cp.Seq) == call {
			from = i
			break
		}
	}
	if from < 0 {
		return nil, fmt.Errorf("no checkpoint for call %q (see agentbox changes %s)", call, filepath.Base(filepath.Dir(s.State)))
	}
	undo := cps[from:]
	// Check first: every promoted path must be as promotion (or a later
	// checkpoint) left it.
	type state struct {
		st     fstree.Stamp
		absent bool
	}
	final := map[string]state{} // what the last promotion left at each path
	var paths []string
	for _, cp := range undo {
		for _, c := range cp.Promoted() {
			if _, ok := final[c.Path]; !ok {
				paths = append(paths, c.Path)
			}
			if c.Change == "deleted" {
				final[c.Path] = state{absent: true}
			} else {
				final[c.Path] = state{st: cp.After[c.Path]}
			}
		}
	}
	// Through descriptors: a link in the workspace is never followed (a
	// path behind one reads as missing, and the rewind refuses).
	low, err := fstree.OpenRoot(s.Lower)
	if err != nil {
		return nil, fmt.Errorf("opening the workspace: %w", err)
	}
	defer low.Close()
	var conflicts []string
	for _, p := range paths {
		f := final[p]
		cur, err := low.Stat(p)
		switch {
		case p == ".git/index":
			// git rewrites its index on a mere git status: put the old one
			// back whatever the host's git did to it.
		case f.absent && err == nil && !cur.IsDir():
			conflicts = append(conflicts, p+" (created again in the workspace)")
		case f.absent:
		case err != nil:
			conflicts = append(conflicts, p+" (deleted in the workspace)")
		case fstree.Changed(f.st, cur):
			conflicts = append(conflicts, p+" (changed in the workspace)")
		}
	}
	if len(conflicts) > 0 {
		return nil, fmt.Errorf("%w: %s; nothing was restored", ErrRewindConflict, strings.Join(conflicts, ", "))
	}
	out := &Rewound{To: undo[0].Seq}
	for i := len(undo) - 1; i >= 0; i-- {
		cp := undo[i]
		ch := cp.Promoted()
		for j := len(ch) - 1; j >= 0; j-- {
			c := ch[j]
			if err := s.restore(low, &cp, c); err != nil {
				return out, fmt.Errorf("restoring %s: %w (checkpoints after %d are partly undone)", c.Path, err, cp.Seq)
			}
			out.Restored = append(out.Restored, c.Path)
		}
		if err := os.MkdirAll(filepath.Join(s.State, "rewound"), 0o700); err != nil {
			return out, err
		}
		if err := os.Rename(s.checkpointPath(cp.Seq), filepath.Join(s.State, "rewound", strconv.Itoa(cp.Seq)+".json")); err != nil {
			return out, err
		}
	}
	return out, s.restamp(low, cps[:from], out.Restored)
}

// restamp records, in the newest remaining checkpoint that promoted each
// restored path, the entry the rewind put back: a later rewind checks the
// workspace against it.
func (s *Stage) restamp(low *fstree.Root, left []Checkpoint, restored []string) error {
	dirty := map[int]bool{}
	for _, p := range restored {
		cur, err := low.Stat(p)
		if err != nil {
			continue
		}
		for i := len(left) - 1; i >= 0; i-- {
			if _, ok := left[i].After[p]; ok {
				left[i].After[p] = cur
				dirty[i] = true
				break
			}
		}
		if pr, ok := s.st.Promoted[p]; ok {
			pr.Lower = cur
			s.st.Promoted[p] = pr
		}
	}
	for i := range dirty {
		if err := writeJSON(s.checkpointPath(left[i].Seq), left[i]); err != nil {
			return err
		}
	}
	return s.save()
}

// restore undoes one promoted change.
func (s *Stage) restore(low *fstree.Root, cp *Checkpoint, c StagedChange) error {
	before := filepath.Join(s.State, "before", strconv.Itoa(cp.Seq), filepath.FromSlash(c.Path))
	switch {
	case c.Change == ChangeMode:
		if m, ok := cp.BeforeMode[c.Path]; ok {
			return low.Chmod(c.Path, fs.FileMode(m))
		}
		return nil
	case c.Type == TypeDir && c.Change == "added":
		err := low.Remove(c.Path)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	case c.Type == TypeDir:
		return low.MkdirAll(c.Path, 0o755)
	}
	fi, err := os.Lstat(before)
	if errors.Is(err, fs.ErrNotExist) {
		if c.Change == "added" {
			err := low.Remove(c.Path)
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		return fmt.Errorf("its before-image is missing from %s", before)
	}
	if err != nil {
		return err
	}
	if err := low.MkdirAll(path.Dir(c.Path), 0o755); err != nil && path.Dir(c.Path) != "." {
		return err
	}
	tmp := applyTmp(c.Path) // created exclusively: nothing of the user's is replaced
	if fi.Mode()&fs.ModeSymlink != 0 {
		t, err := os.Readlink(before)
		if err != nil {
			return err
		}
		if err := low.Symlink(t, tmp); err != nil {
			return err
		}
		if err := low.Rename(tmp, c.Path); err != nil {
			_ = low.Remove(tmp)
			return err
		}
		return nil
	}
	in, err := os.OpenFile(before, os.O_RDONLY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return err
	}
	defer in.Close()
	outf, err := low.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = io.Copy(outf, in)
	if err == nil {
		err = outf.Chmod(fi.Mode().Perm())
	}
	if err == nil {
		err = outf.Sync()
	}
	if cerr := outf.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = low.Rename(tmp, c.Path)
	}
	if err != nil {
		_ = low.Remove(tmp)
	}
	return err
}
