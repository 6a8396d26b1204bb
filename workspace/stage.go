package workspace

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"

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
	// target is a symlink's target as read once when listed: what is
	// judged is what is promoted.
	target string
	// through: for a link judged to stay inside, every path its
	// resolution went through in the host's view; the promoter holds
	// the link when one of them failed to be promoted.
	through []string
	// unread says why the entry could not be read as the walk listed it
	// (a link no longer a link, or gone, when its target is read): it is
	// held, never left out (promotion leaves the workspace's entry
	// there, and the link check must judge that one).
	unread string
	// sealed: promotion made this directory sealed (unseen.go).
	sealed bool
	// headValid: a file named HEAD read as git's HEAD when listed (not
	// strict, strict); the promoted copy must read the same.
	headValid [2]bool
	// lowSeen: the listing read the workspace entry at Path (low, or
	// none when !lowIn); the conflict decision reads that.
	lowSeen, lowIn bool
	low            fstree.Stamp
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
	// hidden are the directories List found sealed by a recreated one
	// above them (unseen.go): Promote records them.
	hidden map[string]promotedEntry
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

// newLister decides changes against s's lower layer (the workspace),
// which it reads through descriptors that never follow a link; Close
// releases them.
func (s *Stage) newLister(all bool) (*lister, error) {
	low, err := fstree.OpenRoot(s.Lower)
	if err != nil {
		return nil, fmt.Errorf("opening the workspace: %w", err)
	}
	up, err := fstree.OpenRoot(s.Upper)
	if err != nil {
		low.Close()
		return nil, fmt.Errorf("opening the staging layer: %w", err)
	}
	if s.hidden == nil {
		s.hidden = map[string]promotedEntry{} // a listing not through list (a real copy's)
	}
	own := hasOwnGit(s.Lower)
	if s.st.GitDirs == nil {
		s.st.GitDirs = map[string]bool{}
	}
	git := &gitView{upper: s.Upper, lower: s.Lower, ownGit: own, sticky: s.st.GitDirs, seen: map[string]gitCandidate{}}
	return &lister{s: s, ownGit: own, all: all, gitView: git, heldDirs: map[string]bool{},
		low: low, up: up, lowd: newDirFds(low), upd: newDirFds(up), index: map[string]int{}, sealedOK: map[string]bool{}, lowDirs: map[string]bool{}, sealingNow: map[string]bool{}}, nil
}

// Close releases the lister's descriptors.
func (l *lister) Close() {
	l.lowd.close()
	l.upd.close()
	l.low.Close()
	l.up.Close()
}

func (s *Stage) list(all bool) ([]StagedChange, error) { return s.listing(all, false) }

// listing is list; atCopy: the gitdir: content check is left to the
// copy (rw promotion judges every file's content again on the bytes it
// writes, contentHazard), so that a file is read once.
func (s *Stage) listing(all, atCopy bool) ([]StagedChange, error) {
	s.dirs = map[string]fstree.Stamp{}
	s.hidden = map[string]promotedEntry{}
	l, err := s.newLister(all)
	if err != nil {
		return nil, err
	}
	defer l.Close()
	l.gitdirAtCopy = atCopy
	// Conflicts are decided with everything else (a conflict holds what
	// is below it), in rw promotion: a copy's apply checks its own.
	l.conflicts = !s.Keep && !all
	if err := l.collect(); err != nil {
		return nil, err
	}
	l.decideAll()
	return l.out, nil
}

// collect lists the changes of the upper directory (l.out), undecided.
// What cannot be listed fails the listing: nothing is promoted. What is
// listed and then cannot be read to decide it (gone or changed since, by
// a process the sandbox kept) is held with the reason.
func (l *lister) collect() error {
	s := l.s
	// Directories are read on a few goroutines (a call's cost is mostly
	// system calls); decideAll puts the list in order.
	res, err := fstree.Walk(s.Upper, fstree.Options{Parallel: listWorkers}, l.visit)
	if err != nil {
		return fmt.Errorf("reading the staged changes in %s: %w", s.Upper, err)
	}
	if res.Incomplete != "" {
		return fmt.Errorf("reading the staged changes in %s: %s; nothing was promoted", s.Upper, res.Incomplete)
	}
	if l.err != nil {
		return l.err
	}
	return l.expandDeletions()
}

type lister struct {
	s      *Stage
	ownGit bool
	all    bool // list kept entries too
	// gitdirAtCopy: a file's gitdir: content is judged when it is copied
	// (rw promotion), not read here.
	gitdirAtCopy bool
	out          []StagedChange
	gitView      *gitView // git's discovery rules on the view (gitdiscover.go)
	// heldDirs are the paths held so far, of any type and for any reason
	// (sorted order: parents are decided before their entries); nothing
	// below one is promoted.
	heldDirs map[string]bool

	mu  sync.Mutex // guards out, err and s.dirs while the walk visits
	err error

	low, up *fstree.Root // the workspace and the staging layer: no link followed
	// lowd and upd hold their directories open for the listing: one
	// descriptor per directory, not a path resolved per entry.
	lowd, upd *dirFds
	index     map[string]int // Path -> its index in out (decideAll)
	// memoMu guards sealedOK and lowDirs (the memoized workspace-directory
	// checks), sealingNow (the directories this listing seals) and
	// s.hidden while the walk visits (unseen.go).
	memoMu     sync.Mutex
	sealedOK   map[string]bool
	lowDirs    map[string]bool
	sealingNow map[string]bool
	conflicts  bool // decide conflicts with the workspace (rw promotion)
}

// listWorkers is how many goroutines read the staging layer's
// directories at once.
const listWorkers = 4

// fail records the first error of the walk.
func (l *lister) fail(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err == nil {
		l.err = err
	}
}

// add lists changes (visit runs on several goroutines).
func (l *lister) add(cs ...StagedChange) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.out = append(l.out, cs...)
}

func (l *lister) visit(e *fstree.Entry) bool {
	// Through descriptors: a link in the workspace above e.Rel is not
	// followed (the merged view has nothing below a non-directory).
	low, lerr := l.lowd.stat(e.Rel)
	inLower := lerr == nil
	if lerr != nil && !noEntry(lerr) {
		l.fail(fmt.Errorf("reading the workspace at %s: %w", e.Rel, lerr))
		return false
	}
	// A promoted opaque directory whose entries may have changed: its mtime
	// or, as the sandbox can set the mtime back (utimensat) but never the
	// ctime, its ctime moved.
	if p, ok := l.s.st.Promoted[e.Rel]; ok && e.IsDir() && inLower && low.IsDir() &&
		(p.Upper.MTime != e.MTime || p.Upper.CTime != e.CTime) && (p.Sealed || opaque(e.Dirfd, e.Name)) {
		if err := l.opaqueDeletions(e); err != nil {
			l.fail(err)
			return false
		}
	}
	if p, ok := l.s.st.Promoted[e.Rel]; ok && !fstree.Changed(p.Upper, e.Stamp) && (!inLower || !fstree.Changed(p.Lower, low) || e.IsDir()) {
		if e.IsDir() && inLower && low.IsDir() && !p.Sealed {
			l.sealing(e.Rel, e.Stamp, low, false) // below a directory recreated now
		}
		return true // promoted already, untouched since
	}
	if k, ok := l.s.st.Kept[e.Rel]; ok && !l.all && !fstree.Changed(k.Upper, e.Stamp) && (!inLower || !fstree.Changed(k.Lower, low) || e.IsDir()) {
		return true // decided and kept already, untouched since
	}
	c := StagedChange{Path: e.Rel, Type: typeOf(e.Stamp), upper: e.Stamp, Bytes: e.Size, lowSeen: true, lowIn: inLower, low: low}
	if e.IsSymlink() {
		t, err := fstree.ReadlinkAt(e.Dirfd, e.Name)
		if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOENT) {
			// No longer a link, or gone, since the walk read it (a
			// process the sandbox kept replaced it): held as undecided,
			// not a failed listing.
			c.unread = "the link changed while it was read (" + err.Error() + "); undecided changes are held"
			err = nil
		}
		if err != nil {
			l.fail(fmt.Errorf("reading the staged link %s: %w", e.Rel, err))
			return false
		}
		c.target = t
	}
	if e.IsRegular() && foldName(e.Name) == foldName("HEAD") {
		c.headValid[0], _ = readHeadAt(e.Dirfd, e.Name, false)
		c.headValid[1], _ = readHeadAt(e.Dirfd, e.Name, true)
	}
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
			c.Change = "modified" // a file replaced by a directory (sealed once promoted)
		case c.opq:
			c.Change, c.gone = "modified", true // its old entries are gone
			l.sealing(e.Rel, e.Stamp, low, true)
		case low.Mode != e.Mode:
			c.Change = ChangeMode
			l.sealing(e.Rel, e.Stamp, low, false)
		default:
			l.sealing(e.Rel, e.Stamp, low, false)
			return true // only copied up for an entry below
		}
	default:
		switch {
		case !inLower:
			c.Change = "added"
		case l.sameAsLower(e, low, c.target):
			if low.Mode == e.Mode {
				return true
			}
			c.Change = ChangeMode
		default:
			c.Change, c.gone = "modified", low.IsDir()
		}
	}
	l.add(c)
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
		fd, err := l.low.ReadDirFd(c.Path)
		if err != nil {
			if errors.Is(err, unix.ENOTDIR) || errors.Is(err, fstree.ErrLinkInPath) {
				continue
			}
			return fmt.Errorf("reading the workspace below %s: %w", c.Path, err)
		}
		res, err := fstree.WalkFd(fd, fstree.Options{}, func(e *fstree.Entry) bool {
			rel := c.Path + "/" + e.Rel
			if c.opq {
				if st, err := l.up.Stat(rel); err == nil && !st.Whiteout() {
					return true // listed (or unchanged) by the upper walk
				}
			}
			if !seen[rel] {
				seen[rel] = true
				l.out = append(l.out, StagedChange{Path: rel, Change: "deleted", Type: typeOf(e.Stamp), Bytes: e.Size})
			}
			return true
		})
		unix.Close(fd)
		if err != nil {
			return fmt.Errorf("reading the workspace below %s: %w", c.Path, err)
		}
		if res.Incomplete != "" {
			return fmt.Errorf("reading the workspace below %s: %s; nothing was promoted", c.Path, res.Incomplete)
		}
	}
	return nil
}

// sameAsLower reports whether the upper regular file or symlink e (with
// target, read once) holds the lower one's content (copied up for a chmod
// or touch). Both sides are read through descriptors, never a link.
func (l *lister) sameAsLower(e *fstree.Entry, low fstree.Stamp, target string) bool {
	if low.Type() != e.Type() || low.Size != e.Size {
		return false
	}
	if e.IsSymlink() {
		b, err := l.low.Readlink(e.Rel)
		return err == nil && target == b
	}
	if !e.IsRegular() {
		return false
	}
	a, _, err1 := hashAt(e.Dirfd, e.Name)
	b, err2 := "", error(nil)
	if fd, name, err := l.lowd.parent(e.Rel); err != nil {
		err2 = err
	} else {
		b, _, err2 = hashAt(fd, name)
	}
	return err1 == nil && err2 == nil && a == b
}

// hazard is the host hazard of a change ("" when none).
func (l *lister) hazard(c *StagedChange) (string, string) {
	if rule, why := l.namedHazard(c); rule != "" {
		return rule, why
	}
	return l.typeHazard(c)
}

// namedHazard is the host hazard of a change by its path (and, for a
// file or link, where the catalogue's directories go): what an allow
// rule naming the path lifts.
func (l *lister) namedHazard(c *StagedChange) (string, string) {
	if rule, why := pathHazard(c.Path, l.ownGit); rule != "" {
		return rule, why
	}
	return l.leafHazard(c)
}

// typeHazard is the host hazard of a change by what it is (a special
// file, a link that leaves, git's content rules), "" when none: an
// allow rule naming the path never lifts it.
func (l *lister) typeHazard(c *StagedChange) (string, string) {
	if c.Change != "deleted" {
		switch c.Type {
		case TypeSpecial:
			return HazardSpecial, "a FIFO, socket or device node"
		case TypeSymlink:
			// By its text here; where it resolves, once everything else
			// is decided (decideAll).
			if _, _, ok := linkText(c.target, strings.Count(c.Path, "/")); !ok || symlinkOutside(c.Path, c.target) {
				return HazardSymlink, symlinkWhy(c.target)
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
