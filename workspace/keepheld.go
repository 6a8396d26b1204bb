package workspace

import (
	"fmt"
	"os"
	"path/filepath"
)

// KeepHeld moves the records of a copy's held changes (its stage
// directory: checkpoints and the held content) into store as an ended
// staged session, so that `agentbox changes SESSION --held` shows them
// once the copy itself is removed (a batch task's copy lives in the
// batch's work directory and goes with the task). It returns how many
// changes were held; with none, nothing is kept. Call it after the
// session's last changes were decided (its sandbox is gone).
func (c *Copy) KeepHeld(store Store) (int, error) {
	if c.stage == nil {
		return 0, nil
	}
	cps, err := c.stage.Checkpoints()
	if err != nil {
		return 0, err
	}
	held := 0
	for _, k := range cps {
		held += len(k.HeldChanges())
	}
	if held == 0 {
		return 0, nil
	}
	d, err := store.dir(c.Session)
	if err != nil {
		return held, err
	}
	if err := os.MkdirAll(d, 0o700); err != nil {
		return held, fmt.Errorf("keeping the held changes of session %s: %w", c.Session, err)
	}
	if err := os.Rename(c.StageDir(), filepath.Join(d, "stage")); err != nil {
		_ = os.Remove(d)
		return held, fmt.Errorf("keeping the held changes of session %s in %s: %w", c.Session, d, err)
	}
	kept := &Copy{Root: d, Meta: c.Meta}
	kept.State, kept.Owner = StateStaged, nil
	return held, kept.save()
}
