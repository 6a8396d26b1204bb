package workspace

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"github.com/agentbox/agentbox/internal/fstree"
)

// ErrForkExists: the directory a fork would be written into exists; it
// was not touched.
var ErrForkExists = errors.New("the fork's directory exists")

// ForkDirFree refuses a fork's directory dst that exists (ErrForkExists,
// saying what to do), before anything is written.
func ForkDirFree(dst string) error {
	if _, err := os.Lstat(dst); err == nil {
		return fmt.Errorf("%w: %s; fork writes into a new directory (nothing was written there): name one that does not exist", ErrForkExists, dst)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("checking the fork's directory %s: %w", dst, err)
	}
	return nil
}

// Fork writes into dst (which must not exist: an existing one is refused
// before anything is written, and left as it is) the workspace of a
// staged session as it was right after the checkpoint of call (a call id
// or a checkpoint number): a copy of the workspace as it is now, with
// every later checkpoint undone from its before-images. The copy is
// built in a new directory beside dst and renamed to dst at the end, so
// a failure removes only what Fork made. The session's records and the
// workspace are not changed. Its cost is the copy (reflinked where the
// filesystem can) plus the changes undone.
func (s *Stage) Fork(call, dst string, maxBytes int64) (int, error) {
	if err := ForkDirFree(dst); err != nil {
		return 0, err
	}
	cps, err := s.Checkpoints()
	if err != nil {
		return 0, err
	}
	at := -1
	for i, cp := range cps {
		if cp.CallID == call || strconv.Itoa(cp.Seq) == call {
			at = i
			break
		}
	}
	if at < 0 {
		return 0, fmt.Errorf("no checkpoint for call %q (see agentbox changes)", call)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dst), "."+filepath.Base(dst)+".agentbox-fork-")
	if err != nil {
		return 0, fmt.Errorf("making the fork's directory: %w", err)
	}
	defer RemoveTree(tmp) // Fork's own: empty once the fork is renamed into place
	work := filepath.Join(tmp, "fork")
	if _, err := CopyTreeReflink(s.Lower, work, maxBytes); err != nil {
		return 0, err
	}
	root, err := fstree.OpenRoot(work)
	if err != nil {
		return 0, err
	}
	defer root.Close()
	for i := len(cps) - 1; i > at; i-- {
		cp := cps[i]
		ch := cp.Promoted()
		for j := len(ch) - 1; j >= 0; j-- {
			if err := s.restore(root, &cp, ch[j]); err != nil {
				return 0, fmt.Errorf("undoing %s of checkpoint %d in the fork: %w", ch[j].Path, cp.Seq, err)
			}
		}
	}
	// rename(2) replaces only an empty directory: one made meanwhile
	// with anything in it makes the fork fail, untouched.
	if err := os.Rename(work, dst); err != nil {
		return 0, fmt.Errorf("%w: %s appeared while the fork was written: %v", ErrForkExists, dst, err)
	}
	return cps[at].Seq, nil
}
