package workspace

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/sandbox"
)

// Kinds of copy (Meta.Kind).
const (
	KindOverlay = "overlay" // copy-on-write: the workspace is the lower layer
	KindReflink = "reflink" // a real copy whose files share blocks (FICLONE)
	KindCopy    = "copy"    // a real, byte-for-byte copy
)

// States of a copy (Meta.State).
const (
	StateRunning   = "running"   // a sandbox works on it
	StatePending   = "pending"   // changes wait for apply or discard
	StateApplied   = "applied"   // applied; only the record is left
	StateDiscarded = "discarded" // discarded; only the record is left
	StateEmpty     = "empty"     // the session changed nothing
)

// DefaultTTL is how long gc keeps pending copies.
const DefaultTTL = 30 * 24 * time.Hour

// ErrNoSession: no copy of that session in the store.
var ErrNoSession = errors.New("no workspace copy for that session")

// Meta is the record of one copy (meta.json in its directory).
type Meta struct {
	Session   string             `json:"session"`
	Workspace string             `json:"workspace"`
	Kind      string             `json:"kind"`
	State     string             `json:"state"`
	Created   time.Time          `json:"created"`
	Since     int64              `json:"since_ns"` // workspace entries with a ctime at or after this changed during or after the session
	DiskBound string             `json:"disk_bound"`
	DiskFull  bool               `json:"disk_full,omitempty"` // the session reached the bound
	Changes   []audit.FileChange `json:"changes,omitempty"`
	// Owner names the agentbox process that made the copy (sandbox owner
	// labels): gc releases the mounts of a session whose owner was killed.
	Owner map[string]string `json:"owner,omitempty"`
}

// Store is the directory that holds the copies, one directory per session.
type Store struct{ Dir string }

// DefaultStore is $XDG_STATE_HOME/agentbox/work (~/.local/state/agentbox/work).
func DefaultStore(getenv func(string) string) (Store, error) {
	base := getenv("XDG_STATE_HOME")
	if base == "" {
		home := getenv("HOME")
		if home == "" {
			return Store{}, fmt.Errorf("%w: neither XDG_STATE_HOME nor HOME is set; set one to say where workspace copies live", sandbox.ErrConfig)
		}
		base = filepath.Join(home, ".local", "state")
	}
	if !filepath.IsAbs(base) {
		return Store{}, fmt.Errorf("%w: XDG_STATE_HOME %q is not absolute", sandbox.ErrConfig, base)
	}
	return Store{Dir: filepath.Join(base, "agentbox", "work")}, nil
}

func (s Store) dir(session string) (string, error) {
	if !sandbox.ValidID(session) {
		return "", fmt.Errorf("%w: %q is not a session id (see agentbox changes)", ErrNoSession, session)
	}
	return filepath.Join(s.Dir, session), nil
}

// Load reads the record of one session's copy.
func (s Store) Load(session string) (*Copy, error) {
	d, err := s.dir(session)
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(filepath.Join(d, metaFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s (see agentbox changes)", ErrNoSession, session)
	}
	if err != nil {
		return nil, fmt.Errorf("reading the copy of session %s: %w", session, err)
	}
	c := &Copy{Root: d}
	if err := json.Unmarshal(b, &c.Meta); err != nil {
		return nil, fmt.Errorf("reading the copy of session %s: %w; remove %s", session, err, d)
	}
	return c, nil
}

// List returns the records of every copy, oldest first.
func (s Store) List() ([]Meta, error) {
	ents, err := os.ReadDir(s.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing workspace copies in %s: %w", s.Dir, err)
	}
	var out []Meta
	for _, e := range ents {
		if !e.IsDir() || !sandbox.ValidID(e.Name()) {
			continue
		}
		c, err := s.Load(e.Name())
		if err != nil {
			continue
		}
		out = append(out, c.Meta)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Created.Before(out[j].Created) })
	return out, nil
}

// Discard removes a session's copy; its record stays as discarded until gc.
func (s Store) Discard(session string) error {
	c, err := s.Load(session)
	if err != nil {
		return err
	}
	if c.State == StateRunning {
		return fmt.Errorf("session %s is still running (or was killed): end it first, or remove %s by hand", session, c.Root)
	}
	if err := c.removeData(); err != nil {
		return err
	}
	c.State = StateDiscarded
	return c.save()
}

// GC removes the copies that were applied, discarded or found empty, and
// pending ones (and staged sessions' records: checkpoints, held changes)
// older than ttl. It returns the sessions removed.
func (s Store) GC(ttl time.Duration, now time.Time) ([]string, error) {
	list, err := s.List()
	if err != nil {
		return nil, err
	}
	var removed []string
	var errs []error
	for _, m := range list {
		if (m.State == StateRunning || m.State == StateLive) && ownerGone(m.Owner) {
			// Killed mid-session (SIGKILL, a crash): its disk image and
			// overlay stay mounted until here. The data stays for review.
			d, _ := s.dir(m.Session)
			unmountBelow(d)
		}
		expired := (m.State == StatePending || m.State == StateStaged) && now.Sub(m.Created) > ttl
		if m.State != StateApplied && m.State != StateDiscarded && m.State != StateEmpty && !expired {
			continue
		}
		d, _ := s.dir(m.Session)
		if err := RemoveTree(d); err != nil {
			if _, serr := os.Lstat(filepath.Join(d, metaFile)); serr == nil {
				errs = append(errs, err)
				continue
			}
			// Only overlay's root-owned work directory is left (non-root).
		}
		removed = append(removed, m.Session)
	}
	return removed, errors.Join(errs...)
}

// Inside reports whether path is dir or below it.
func Inside(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../") && !filepath.IsAbs(rel)
}

// ownerGone reports whether the process that owns a copy is proven gone.
func ownerGone(owner map[string]string) bool {
	if len(owner) == 0 {
		return false
	}
	st := sandbox.JudgeOwner(owner)
	return st == sandbox.OwnerDead || st == sandbox.OwnerOtherBoot
}
