package workspace

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"

	"github.com/agentbox/agentbox/internal/fstree"
	"golang.org/x/sys/unix"
)

// Change types (StagedChange.Type).
const (
	TypeFile    = "file"
	TypeDir     = "dir"
	TypeSymlink = "symlink"
	TypeSpecial = "special"
)

// StagedChange is one change the sandbox staged in an overlay upper
// directory, with the host's decision about it.
type StagedChange struct {
	Path   string `json:"path"`
	Change string `json:"change"` // added | modified | deleted | mode
	Type   string `json:"type"`
	// Held is the rule that keeps the change from the workspace ("" =
	// promoted): a policy rule (files.write.deny[N]), a hazard:* rule,
	// conflict or disk-full. Why says it in words.
	Held     string `json:"held,omitempty"`
	Why      string `json:"why,omitempty"`
	Before   string `json:"sha256_before,omitempty"`
	After    string `json:"sha256_after,omitempty"`
	Bytes    int64  `json:"bytes"`
	SetIDCut bool   `json:"setid_cleared,omitempty"`

	upper fstree.Stamp
	opq   bool // an opaque directory (hides the lower one)
	gone  bool // the lower entry at Path is a directory whose entries go
}

// WriteDecider decides a change at a workspace-relative path by the
// policy's files.write rules: denied, and the rule ("files.write.deny[0]");
// explicit says an allow rule names the path itself (a host hazard is
// then promoted). nil allows everything the hazards allow.
type WriteDecider func(rel string) (denied bool, rule string, explicit bool)

// Stage is a staged workspace: the sandbox writes to Upper, an overlay's
// upper directory over the workspace Lower; trusted host code lists the
// changes there (cost ∝ Upper, never ∝ Lower), decides each one and
// promotes the allowed ones (Promote) or keeps them for review. Its
// records live in State.
type Stage struct {
	Upper, Lower, State string
	Decide              WriteDecider
	st                  stageState
	// dirs are the promoted opaque directories whose entries List
	// compared with the workspace: Promote records their stamps.
	dirs map[string]fstree.Stamp
	// tree: Upper is a whole tree (a real copy), not an overlay upper
	// layer: what it lacks is absent, not the workspace's.
	tree bool
	// Keep makes Promote keep the allowed changes in the upper directory
	// (copy mode: they wait for agentbox apply) instead of writing them
	// to the workspace; held changes are held all the same.
	Keep bool
}

// OpenStage opens (or creates) the staging records in state for the
// upper directory upper over the workspace lower.
func OpenStage(upper, lower, state string, decide WriteDecider) (*Stage, error) {
	s := &Stage{Upper: upper, Lower: lower, State: state, Decide: decide}
	if err := os.MkdirAll(state, 0o700); err != nil {
		return nil, fmt.Errorf("creating the staging records: %w", err)
	}
	if err := s.load(); err != nil {
		return nil, err
	}
	if s.st.Since == 0 {
		since, err := clockProbe(state)
		if err != nil {
			return nil, err
		}
		s.st.Since = since
		if err := s.save(); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// List reads the upper directory and decides every change it holds that
// was not promoted yet. Nothing is written. The walk goes through
// directory descriptors of the host's own: nothing the sandbox does to
// the upper directory (permissions, depth, symlinks, special files) can
// hide an entry; what cannot be read makes the list fail.
func (s *Stage) List() ([]StagedChange, error) { return s.list(false) }

// ListAll is List including the changes a copy-mode stage kept already
// (what agentbox apply would write), decided again.
func (s *Stage) ListAll() ([]StagedChange, error) { return s.list(true) }

// newLister decides changes against s's lower layer (the workspace).
func (s *Stage) newLister(all bool) *lister {
	own := hasOwnGit(s.Lower)
	if s.st.GitDirs == nil {
		s.st.GitDirs = map[string]bool{}
	}
	git := &gitView{upper: s.Upper, lower: s.Lower, ownGit: own, sticky: s.st.GitDirs, seen: map[string]gitCandidate{}}
	return &lister{s: s, ownGit: own, all: all, gitView: git, heldDirs: map[string]bool{}}
}

func (s *Stage) list(all bool) ([]StagedChange, error) {
	s.dirs = map[string]fstree.Stamp{}
	l := s.newLister(all)
	res, err := fstree.Walk(s.Upper, fstree.Options{Sorted: true}, l.visit)
	if err != nil {
		return nil, fmt.Errorf("reading the staged changes in %s: %w", s.Upper, err)
	}
	if res.Incomplete != "" {
		return nil, fmt.Errorf("reading the staged changes in %s: %s; nothing was promoted", s.Upper, res.Incomplete)
	}
	if l.err != nil {
		return nil, l.err
	}
	if err := l.expandDeletions(); err != nil {
		return nil, err
	}
	sort.Slice(l.out, func(i, j int) bool { return l.out[i].Path < l.out[j].Path })
	for i := range l.out {
		l.decide(&l.out[i])
		if c := l.out[i]; c.Held != "" && c.Type == TypeDir && c.Change != "deleted" {
			l.heldDirs[c.Path] = true
		}
	}
	return l.out, nil
}

type lister struct {
	s       *Stage
	ownGit  bool
	all     bool // list kept entries too
	out     []StagedChange
	gitView *gitView // git's discovery rules on the view (gitdiscover.go)
	// heldDirs are the directories held so far (sorted order: parents
	// are decided before their entries).
	heldDirs map[string]bool
	err      error
}

func (l *lister) visit(e *fstree.Entry) bool {
	low, lerr := fstree.Lstat(unix.AT_FDCWD, filepath.Join(l.s.Lower, filepath.FromSlash(e.Rel)))
	inLower := lerr == nil
	if lerr != nil && !errors.Is(lerr, unix.ENOENT) && !errors.Is(lerr, unix.ENOTDIR) {
		l.err = fmt.Errorf("reading the workspace at %s: %w", e.Rel, lerr)
		return false
	}
	if p, ok := l.s.st.Promoted[e.Rel]; ok && e.IsDir() && inLower && low.IsDir() && p.Upper.MTime != e.MTime && opaque(e.Dirfd, e.Name) {
		if err := l.opaqueDeletions(e); err != nil {
			l.err = err
			return false
		}
	}
	if p, ok := l.s.st.Promoted[e.Rel]; ok && !fstree.Changed(p.Upper, e.Stamp) && (!inLower || !fstree.Changed(p.Lower, low) || e.IsDir()) {
		return true // promoted already, untouched since
	}
	if k, ok := l.s.st.Kept[e.Rel]; ok && !l.all && !fstree.Changed(k.Upper, e.Stamp) && (!inLower || !fstree.Changed(k.Lower, low) || e.IsDir()) {
		return true // decided and kept already, untouched since
	}
	c := StagedChange{Path: e.Rel, Type: typeOf(e.Stamp), upper: e.Stamp, Bytes: e.Size}
	switch {
	case e.Whiteout():
		if !inLower {
			return false
		}
		c.Change, c.Type, c.Bytes, c.gone = "deleted", typeOf(low), low.Size, low.IsDir()
	case e.IsDir():
		c.opq = opaque(e.Dirfd, e.Name)
		switch {
		case !inLower:
			c.Change = "added"
		case !low.IsDir():
			c.Change = "modified" // a file replaced by a directory
		case c.opq:
			c.Change, c.gone = "modified", true // its old entries are gone
		case low.Mode != e.Mode:
			c.Change = ChangeMode
		default:
			return true // only copied up for an entry below
		}
	default:
		switch {
		case !inLower:
			c.Change = "added"
		case l.s.sameAsLower(e, low):
			if low.Mode == e.Mode {
				return true
			}
			c.Change = ChangeMode
		default:
			c.Change, c.gone = "modified", low.IsDir()
		}
	}
	l.out = append(l.out, c)
	return true
}

// expandDeletions lists, for each change that removes a workspace
// directory's entries (a deleted directory, an opaque one, a directory
// replaced by a file), every entry below it as deleted, so that each is
// decided on its own (cost: the deleted subtree).
func (l *lister) expandDeletions() error {
	seen := map[string]bool{}
	for _, c := range l.out {
		seen[c.Path] = true
	}
	n := len(l.out)
	for i := 0; i < n; i++ {
		c := l.out[i]
		if !c.gone {
			continue
		}
		res, err := fstree.Walk(filepath.Join(l.s.Lower, filepath.FromSlash(c.Path)), fstree.Options{}, func(e *fstree.Entry) bool {
			rel := c.Path + "/" + e.Rel
			if c.opq {
				if st, err := fstree.Lstat(unix.AT_FDCWD, filepath.Join(l.s.Upper, filepath.FromSlash(rel))); err == nil && !st.Whiteout() {
					return true // listed (or unchanged) by the upper walk
				}
			}
			if !seen[rel] {
				seen[rel] = true
				l.out = append(l.out, StagedChange{Path: rel, Change: "deleted", Type: typeOf(e.Stamp), Bytes: e.Size})
			}
			return true
		})
		if err != nil && !errors.Is(err, fstree.ErrNotDir) {
			return fmt.Errorf("reading the workspace below %s: %w", c.Path, err)
		}
		if res.Incomplete != "" {
			return fmt.Errorf("reading the workspace below %s: %s; nothing was promoted", c.Path, res.Incomplete)
		}
	}
	return nil
}

// sameAsLower reports whether the upper regular file or symlink e holds
// the lower one's content (copied up for a chmod or touch).
func (s *Stage) sameAsLower(e *fstree.Entry, low fstree.Stamp) bool {
	if low.Type() != e.Type() || low.Size != e.Size {
		return false
	}
	up := filepath.Join(s.Upper, filepath.FromSlash(e.Rel))
	lo := filepath.Join(s.Lower, filepath.FromSlash(e.Rel))
	if e.IsSymlink() {
		a, err1 := os.Readlink(up)
		b, err2 := os.Readlink(lo)
		return err1 == nil && err2 == nil && a == b
	}
	if !e.IsRegular() {
		return false
	}
	a, _, err1 := hashFile(up)
	b, _, err2 := hashFile(lo)
	return err1 == nil && err2 == nil && a == b
}

// decide fills c.Held: a held parent, the host hazards, then the policy.
func (l *lister) decide(c *StagedChange) {
	for d := path.Dir(c.Path); d != "."; d = path.Dir(d) {
		if l.heldDirs[d] {
			c.Held, c.Why = HazardParent, d+" is held"
			return
		}
	}
	explicit := false
	if l.s.Decide != nil {
		denied, rule, exp := l.s.Decide(c.Path)
		if denied {
			c.Held, c.Why = rule, "files.write denies it"
			return
		}
		explicit = exp
	}
	rule, why := l.hazard(c)
	if rule != "" && !(explicit && rule != HazardSpecial && rule != HazardParent) {
		c.Held, c.Why = rule, why
	}
}

// hazard is the host hazard of a change ("" when none).
func (l *lister) hazard(c *StagedChange) (string, string) {
	if rule, why := pathHazard(c.Path, l.ownGit); rule != "" {
		return rule, why
	}
	if c.Change != "deleted" {
		up := filepath.Join(l.s.Upper, filepath.FromSlash(c.Path))
		switch c.Type {
		case TypeSpecial:
			return HazardSpecial, "a FIFO, socket or device node"
		case TypeSymlink:
			if t, err := os.Readlink(up); err != nil || symlinkOutside(c.Path, t) {
				return HazardSymlink, symlinkWhy(t)
			}
		}
	}
	return l.gitHazard(c)
}

func typeOf(st fstree.Stamp) string {
	switch {
	case st.IsRegular():
		return TypeFile
	case st.IsDir():
		return TypeDir
	case st.IsSymlink():
		return TypeSymlink
	}
	return TypeSpecial
}

// opaque reports an overlay opaque directory (user.* with userxattr,
// trusted.* otherwise).
func opaque(dirfd int, name string) bool {
	p := fmt.Sprintf("/proc/self/fd/%d/%s", dirfd, name)
	buf := make([]byte, 8)
	for _, x := range []string{"user.overlay.opaque", "trusted.overlay.opaque"} {
		if n, err := unix.Lgetxattr(p, x, buf); err == nil && n > 0 && (buf[0] == 'y' || buf[0] == 'x') {
			return true
		}
	}
	return false
}
