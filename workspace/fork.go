package workspace

import (
	"fmt"
	"os"
	"strconv"
)

// Fork writes into dst (which must not exist) the workspace of a staged
// session as it was right after the checkpoint of call (a call id or a
// checkpoint number): a copy of the workspace as it is now, with every
// later checkpoint undone from its before-images. The session's records
// and the workspace are not changed. Its cost is the copy (reflinked
// where the filesystem can) plus the changes undone.
func (s *Stage) Fork(call, dst string, maxBytes int64) (int, error) {
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
	if _, err := CopyTreeReflink(s.Lower, dst, maxBytes); err != nil {
		return 0, err
	}
	root, err := os.OpenRoot(dst)
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
	return cps[at].Seq, nil
}
