package workspace

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"time"

	"github.com/agentbox/agentbox/internal/fstree"
)

// stageState is what a Stage remembers between calls (stage.json).
type stageState struct {
	Since    int64                    `json:"since_ns"` // the filesystem clock when staging began
	Seq      int                      `json:"seq"`      // checkpoints so far
	Promoted map[string]promotedEntry `json:"promoted,omitempty"`
	// HeldBytes is what the held copies kept for review take so far
	// (bounded by heldCopyBudget).
	HeldBytes int64 `json:"held_bytes,omitempty"`
	// Kept are the entries a copy-mode stage (Stage.Keep) decided and
	// left in the upper directory for apply: unchanged since, they are
	// not listed again.
	Kept map[string]promotedEntry `json:"kept,omitempty"`
	// HeldOut are workspace entries a hold took out of the sandbox's view
	// below a sealed directory (the upper copy removed, the workspace's
	// hidden by the opaque directory above): the sandbox no longer sees
	// them, so their absence there is never its deletion (unseen.go).
	HeldOut map[string]bool `json:"held_out,omitempty"`
	// GitDirs are the directories a git name was held in as a repository
	// candidate: they stay candidates for the session (gitdiscover.go).
	GitDirs map[string]bool `json:"git_dirs,omitempty"`
}

// promotedEntry is an upper entry already promoted: unchanged since (the
// upper and the workspace entry both), it is not listed again.
type promotedEntry struct {
	Upper fstree.Stamp `json:"upper"`
	Lower fstree.Stamp `json:"lower"`
	// Sealed: a directory the sandbox sees only the upper directory of
	// (unseen.go): a workspace directory below it that is not recorded
	// is the user's, never the sandbox's to change or delete.
	Sealed bool `json:"sealed,omitempty"`
}

// Checkpoint is one call's promoted change set (calls/<seq>.json), the
// unit of rewind and fork.
type Checkpoint struct {
	Seq     int            `json:"seq"`
	CallID  string         `json:"call_id"`
	Time    time.Time      `json:"time"`
	Changes []StagedChange `json:"changes"` // promoted and held
	// After is the workspace entry each promoted change left (rewind
	// refuses a path changed since).
	After map[string]fstree.Stamp `json:"after,omitempty"`
	// BeforeMode is the mode of entries whose mode alone changed.
	BeforeMode map[string]uint32 `json:"before_mode,omitempty"`
	// Kept: a copy-mode checkpoint; its allowed changes stayed in the
	// copy (for agentbox apply), nothing reached the workspace.
	Kept bool `json:"kept,omitempty"`
}

// Promoted lists the changes of the checkpoint that reached the workspace.
func (c *Checkpoint) Promoted() []StagedChange {
	var out []StagedChange
	for _, ch := range c.Changes {
		if ch.Held == "" {
			out = append(out, ch)
		}
	}
	return out
}

// HeldChanges lists the changes of the checkpoint that were held.
func (c *Checkpoint) HeldChanges() []StagedChange {
	var out []StagedChange
	for _, ch := range c.Changes {
		if ch.Held != "" {
			out = append(out, ch)
		}
	}
	return out
}

const (
	stageFile   = "stage.json"
	journalFile = "journal.json"
)

func (s *Stage) load() error {
	b, err := os.ReadFile(filepath.Join(s.State, stageFile))
	if errors.Is(err, fs.ErrNotExist) {
		s.st = stageState{Promoted: map[string]promotedEntry{}, Kept: map[string]promotedEntry{}}
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading the staging records: %w", err)
	}
	if err := json.Unmarshal(b, &s.st); err != nil {
		return fmt.Errorf("reading the staging records %s: %w", s.State, err)
	}
	if s.st.Promoted == nil {
		s.st.Promoted = map[string]promotedEntry{}
	}
	if s.st.Kept == nil {
		s.st.Kept = map[string]promotedEntry{}
	}
	return nil
}

func (s *Stage) save() error { return writeJSON(filepath.Join(s.State, stageFile), s.st) }

// writeJSON writes v to p atomically and durably.
func writeJSON(p string, v any) error {
	b, err := marshalRecord(v)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return fmt.Errorf("writing %s: %w", p, err)
	}
	tmp := p + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("writing %s: %w", p, err)
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, p)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("writing %s: %w", p, err)
	}
	return nil
}

func (s *Stage) checkpointPath(seq int) string {
	return filepath.Join(s.State, "calls", strconv.Itoa(seq)+".json")
}

// Checkpoints returns the session's checkpoints, oldest first.
func (s *Stage) Checkpoints() ([]Checkpoint, error) { return LoadCheckpoints(s.State) }

// LoadCheckpoints reads the checkpoints kept in a staging state directory.
func LoadCheckpoints(state string) ([]Checkpoint, error) {
	ents, err := os.ReadDir(filepath.Join(state, "calls"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the checkpoints: %w", err)
	}
	var out []Checkpoint
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(state, "calls", e.Name()))
		if err != nil {
			return nil, fmt.Errorf("reading the checkpoints: %w", err)
		}
		var c Checkpoint
		if err := json.Unmarshal(b, &c); err != nil {
			return nil, fmt.Errorf("reading checkpoint %s: %w", e.Name(), err)
		}
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Seq < out[j].Seq })
	return out, nil
}

// Pending is the promotion a killed agentbox left unfinished (nil: none):
// each of its files is either before or after, and Promote finishes it.
func Pending(state string) (*Checkpoint, error) {
	b, err := os.ReadFile(filepath.Join(state, journalFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the promotion journal: %w", err)
	}
	var c Checkpoint
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("reading the promotion journal %s: %w", state, err)
	}
	return &c, nil
}
