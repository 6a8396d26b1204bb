package batch

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/agentbox/agentbox/sandbox"
	"github.com/agentbox/agentbox/workspace"
)

// ownerFile, in a batch's work directory, holds the owner identity of the
// batch process (sandbox.OwnerLabels): gc removes the directory, mounts
// below it included, only once that owner is proven dead.
const ownerFile = "owner.json"

// unownedAge is how old a work directory without an owner file (a batch
// killed while creating it) must be before gc removes it.
const unownedAge = time.Hour

// workOwner is the content of ownerFile.
type workOwner struct {
	Batch   string            `json:"batch"`
	Output  string            `json:"output"`
	Created time.Time         `json:"created"`
	Labels  map[string]string `json:"labels"`
}

// DefaultWorkRoot is where batches keep their workspace copies:
// $XDG_STATE_HOME/agentbox/work/batch, beside the copies of copy-mode runs
// (a name that is no session id, so `agentbox changes` does not list it).
func DefaultWorkRoot(getenv func(string) string) (string, error) {
	s, err := workspace.DefaultStore(getenv)
	if err != nil {
		return "", err
	}
	return filepath.Join(s.Dir, "batch"), nil
}

// openWork makes this batch's work directory, root/<batch id>, and records
// its owner there before any copy exists. A root inside the output
// directory (no WorkRoot) is emptied first: the output lock is held, so
// whatever is there was left by a dead batch.
func (b *batcher) openWork() error {
	root := b.cfg.WorkRoot
	if root == "" {
		root = filepath.Join(b.cfg.Output, workDirName)
		if err := workspace.RemoveTree(root); err != nil {
			return err
		}
	} else {
		_, _ = GCWork(root, time.Now())
	}
	if err := os.MkdirAll(root, 0o700); err != nil {
		return err
	}
	b.work = filepath.Join(root, b.id)
	if err := os.Mkdir(b.work, 0o700); err != nil {
		return err
	}
	own := workOwner{Batch: b.id, Output: b.cfg.Output, Created: time.Now().UTC(), Labels: sandbox.OwnerLabels()}
	return writeSynced(filepath.Join(b.work, ownerFile), own)
}

// closeWork removes this batch's work directory (and OUTPUT/.work).
func (b *batcher) closeWork() {
	_ = workspace.RemoveTree(b.work)
	if b.cfg.WorkRoot == "" {
		_ = os.Remove(filepath.Dir(b.work))
	}
}

// GCWork removes the work directories below root whose batch is proven
// gone (sandbox.GCReason on the recorded owner, as for containers):
// workspace copies, disk images and the mounts below them. A live
// batch's directory is never touched. It returns the directories removed.
func GCWork(root string, now time.Time) ([]string, error) {
	ents, err := os.ReadDir(root)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing batch work directories in %s: %w", root, err)
	}
	var removed []string
	var errs []error
	for _, e := range ents {
		if !e.IsDir() || !sandbox.ValidID(e.Name()) {
			continue
		}
		dir := filepath.Join(root, e.Name())
		if !workDead(dir, now) {
			continue
		}
		if err := workspace.RemoveTree(dir); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, dir)
	}
	return removed, errors.Join(errs...)
}

// workDead reports whether the batch that owns dir is proven gone.
func workDead(dir string, now time.Time) bool {
	var own workOwner
	b, err := os.ReadFile(filepath.Join(dir, ownerFile))
	if err == nil {
		err = json.Unmarshal(b, &own)
	}
	if err != nil || own.Labels == nil {
		// Killed before the owner was recorded (or while writing it).
		fi, serr := os.Lstat(dir)
		return serr == nil && now.Sub(fi.ModTime()) > unownedAge
	}
	return sandbox.GCReason(own.Labels, true, own.Created, now) != ""
}

// writeSynced writes v as JSON to path and fsyncs it (and its directory).
func writeSynced(path string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return syncDir(filepath.Dir(path))
}

// syncDir fsyncs a directory so that a new entry in it survives a crash.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
