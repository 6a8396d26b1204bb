package workspace

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentbox/agentbox/internal/fstree"
	"golang.org/x/sys/unix"
)

// Promote lists the changes staged since the last promotion, decides
// each, writes the allowed ones to the workspace (atomically per file:
// a temporary file renamed over the old one) and holds the rest: a held
// change is moved out of the upper directory into the session's records
// (held/<seq>/), so it is gone from the sandbox and kept for review. A
// file changed in the workspace since the sandbox saw it is held as a
// conflict; a full disk holds the rest. Promoted entries stay in the
// upper directory, so the sandbox's view of them does not change. The
// promotion is journalled: killed half-way, each file is before or after
// and the next Promote (or Pending) shows what was left.
//
// The result is the call's checkpoint (nil when nothing changed).
func (s *Stage) Promote(callID string) (*Checkpoint, error) {
	if s.Keep {
		return s.keep(callID)
	}
	cp, err := s.decideCall(callID)
	if cp == nil || err != nil {
		return nil, err
	}
	return s.promoteDecided(cp)
}

// decideCall lists the changes staged since the last promotion and
// decides each: the first half of Promote (nil: nothing changed).
// Nothing is written, in the workspace or the records.
func (s *Stage) decideCall(callID string) (*Checkpoint, error) {
	// Every file promoted is read once, by its copy, which judges its
	// content (contentHazard) before it is renamed into place.
	changes, err := s.listing(false, true)
	if err != nil || len(changes) == 0 {
		return nil, err
	}
	return &Checkpoint{Seq: s.st.Seq + 1, CallID: callID, Time: time.Now().UTC(), Changes: changes,
		After: map[string]fstree.Stamp{}, BeforeMode: map[string]uint32{}}, nil
}

// promoteDecided is the second half of Promote: the journal, the
// promotion of cp's allowed changes, the holds and the records. Nothing
// else may use the stage meanwhile.
func (s *Stage) promoteDecided(cp *Checkpoint) (*Checkpoint, error) {
	if err := writeJSON(filepath.Join(s.State, journalFile), cp); err != nil {
		return nil, err
	}
	// Every path below either root is resolved without following a
	// link, even one that stays inside: a link in the workspace where a
	// change goes is replaced (as a decided change) or stops the change.
	low, err := fstree.OpenRoot(s.Lower)
	if err != nil {
		return nil, fmt.Errorf("opening the workspace: %w", err)
	}
	defer low.Close()
	up, err := fstree.OpenRoot(s.Upper)
	if err != nil {
		return nil, fmt.Errorf("opening the staging layer: %w", err)
	}
	defer up.Close()
	p := &promoter{s: s, low: low, up: up, cp: cp, before: filepath.Join(s.State, "before", fmt.Sprint(cp.Seq)),
		failed: map[string]bool{}}
	p.promoteAll(cp.Changes)
	if err := p.hold(); err != nil {
		return nil, err
	}
	p.recordHidden()
	for rel, st := range s.dirs {
		if pr, ok := s.st.Promoted[rel]; ok {
			pr.Upper = st
			s.st.Promoted[rel] = pr
		}
	}
	s.st.Seq = cp.Seq
	// The checkpoint and the stage's records are written (and synced)
	// side by side; the journal goes once both are on disk.
	var cerr error
	var wg sync.WaitGroup
	wg.Go(func() { cerr = writeJSON(s.checkpointPath(cp.Seq), cp) })
	serr := s.save()
	wg.Wait()
	if err := errors.Join(cerr, serr); err != nil {
		return nil, err
	}
	_ = os.Remove(filepath.Join(s.State, journalFile))
	return cp, nil
}

type promoter struct {
	s      *Stage
	low    *fstree.Root
	up     *fstree.Root // the upper directory: nothing read from it leads out
	cp     *Checkpoint
	before string
	full   atomic.Bool // the disk filled up: the rest is held

	mu     sync.Mutex      // guards failed and recs, which workers fill
	failed map[string]bool // held during promotion: what is below goes nowhere either
	recs   []promoRec      // what the per-directory workers promoted
	// noClone: the workspace's filesystem has no reflinks (FICLONE
	// failed once): large files are copied in the kernel instead.
	noClone atomic.Bool
}

const diskFullWhy = "the disk filled up during promotion; promote again when there is room"

// fail holds c for the error that stopped its promotion.
func (p *promoter) fail(c *StagedChange, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.failed[c.Path] = true
	if errors.Is(err, unix.ENOSPC) || errors.Is(err, unix.EDQUOT) {
		p.full.Store(true)
		c.Held, c.Why = HazardDiskFull, diskFullWhy
		return
	}
	c.Held, c.Why = HazardNotStaged, "could not be promoted: "+err.Error()
	if c.Change == "deleted" && errors.Is(err, unix.ENOTEMPTY) {
		c.Held, c.Why = HazardConflict, "kept: entries below it stay in the workspace (held, or never the sandbox's); review them and delete them on the host to finish the removal"
	}
	if errors.Is(err, fstree.ErrLinkInPath) {
		c.Why = "could not be promoted: a symbolic link in the workspace is in its way (never followed); remove the link in the workspace, or have the agent replace it"
	}
}

// promoteAll promotes the decided changes: deletions deepest first, then
// everything else parents first. The files (the bulk of a call) go per
// directory and in parallel: a file's deletion before any directory's, a
// file's write after the directories above it are made (nothing is
// below a file).
func (p *promoter) promoteAll(changes []StagedChange) {
	order := make([]int, len(changes))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool {
		ca, cb := changes[order[a]], changes[order[b]]
		da, db := ca.Change == "deleted", cb.Change == "deleted"
		if da != db {
			return da
		}
		if da {
			return ca.Path > cb.Path
		}
		return ca.Path < cb.Path
	})
	// Links go last: each was judged by where it resolves once the rest
	// is promoted, and is held when an entry on its way was not (it
	// changed under a kept process and failed).
	var removes, writes, rest, links []int
	for _, i := range order {
		c := &changes[i]
		switch {
		case c.Held != "":
		case c.Change == "deleted" && c.Type != TypeDir:
			removes = append(removes, i)
		case (c.Change == "added" || c.Change == "modified") && c.Type == TypeFile:
			writes = append(writes, i)
		case (c.Change == "added" || c.Change == "modified") && c.Type == TypeSymlink:
			links = append(links, i)
		default:
			rest = append(rest, i)
		}
	}
	p.perDir(removes, (*dirWork).remove)
	p.each(changes, rest)
	p.perDir(writes, (*dirWork).write)
	p.links(changes, links)
	p.merge()
}

// each promotes the changes at idx one by one, in order: one below a
// failed entry, or a link resolving through one, is held instead.
func (p *promoter) each(changes []StagedChange, idx []int) {
	for _, i := range idx {
		c := &changes[i]
		switch d, via := heldIn(c.Path, p.failed), p.failedOnTheWay(c.through); {
		case d != "":
			p.holdNow(c, HazardParent, d+" is held")
		case via != "":
			p.holdNow(c, HazardSymlink, "a symlink that resolves through "+strconv.Quote(via)+", which could not be promoted, is never promoted")
		case p.full.Load():
			p.holdNow(c, HazardDiskFull, diskFullWhy)
		default:
			if err := p.one(c); err != nil {
				p.fail(c, err)
			}
		}
	}
}

// links promotes the links at idx, each after every other link its
// resolution went through (which may fail, and hold it): in path order
// a link can come before the one it was judged through. Links that
// resolve through each other in a cycle are held.
func (p *promoter) links(changes []StagedChange, idx []int) {
	pending := map[string]bool{}
	for _, i := range idx {
		pending[changes[i].Path] = true
	}
	for len(idx) > 0 {
		var ready, wait []int
		for _, i := range idx {
			if waitsFor(changes[i].Path, changes[i].through, pending) {
				wait = append(wait, i)
			} else {
				ready = append(ready, i)
			}
		}
		if len(ready) == 0 {
			for _, i := range wait {
				p.holdNow(&changes[i], HazardSymlink, "a symlink that resolves through links that resolve through it is never promoted; point it at its destination directly")
			}
			return
		}
		p.each(changes, ready)
		for _, i := range ready {
			delete(pending, changes[i].Path)
		}
		idx = wait
	}
}

// waitsFor reports whether a path of through, or one above it, is a link
// still pending other than self.
func waitsFor(self string, through []string, pending map[string]bool) bool {
	for _, t := range through {
		for d := t; d != "."; d = path.Dir(d) {
			if d != self && pending[d] {
				return true
			}
		}
	}
	return false
}

// holdNow holds c during promotion; a link resolving through it, or an
// entry below it, is held after it.
func (p *promoter) holdNow(c *StagedChange, rule, why string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	c.Held, c.Why = rule, why
	p.failed[c.Path] = true
}

// failedOnTheWay is the first of through that failed to be promoted, or
// is below one that did ("" when none).
func (p *promoter) failedOnTheWay(through []string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, t := range through {
		if p.failed[t] {
			return t
		}
		if d := heldIn(t, p.failed); d != "" {
			return d
		}
	}
	return ""
}

// heldIn is the path of held at or above rel's parent ("" when none).
func heldIn(rel string, held map[string]bool) string {
	for d := path.Dir(rel); d != "."; d = path.Dir(d) {
		if held[d] {
			return d
		}
	}
	return ""
}

// one promotes one allowed change.
func (p *promoter) one(c *StagedChange) error {
	rel := c.Path
	if c.Change != "added" && c.Type != TypeDir {
		if sum, err := p.keepBefore(rel); err != nil {
			return err
		} else {
			c.Before = sum
		}
	}
	if c.Change == "deleted" {
		err := p.low.Remove(rel)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		delete(p.s.st.Promoted, rel)
		return nil
	}
	if dir := path.Dir(rel); dir != "." {
		if err := p.low.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	if c.Change == ChangeMode {
		if old, err := p.low.Lstat(rel); err == nil {
			p.cp.BeforeMode[rel] = uint32(old.Mode().Perm())
		}
		if err := p.low.Chmod(rel, c.upper.FileMode().Perm()); err != nil {
			return err
		}
		if c.upper.Mode&(unix.S_ISUID|unix.S_ISGID) != 0 {
			c.SetIDCut = true
		}
		return p.record(c)
	}
	switch c.Type {
	case TypeDir:
		if fi, err := p.low.Lstat(rel); err == nil && !fi.IsDir() {
			if err := p.low.Remove(rel); err != nil {
				return err
			}
		}
		if err := p.low.Mkdir(rel, c.upper.FileMode().Perm()); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
		c.sealed = c.opq
		// Added, or over a file: the overlay looked it up with no
		// workspace directory below (not opaque below an opaque
		// parent): marked opaque, it stays the sandbox's alone.
		if c.Change == "added" || c.lowSeen && c.lowIn && !c.low.IsDir() {
			after, same, marked := markOpaque(p.up, rel, c.upper)
			if same {
				c.upper = after // what was listed, marked
			}
			c.sealed = c.sealed || marked
		}
		return p.record(c)
	case TypeSymlink:
		target := c.target // as judged: never read again
		tmp := tmpName(rel, p.cp.Seq)
		_ = p.low.Remove(tmp)
		if err := p.low.Symlink(target, tmp); err != nil {
			return err
		}
		s := sha256.Sum256([]byte("symlink:" + target))
		c.After = hex.EncodeToString(s[:])
		if err := p.replace(tmp, rel); err != nil {
			return err
		}
		return p.record(c)
	}
	return fmt.Errorf("a %s change of a %s is promoted per directory", c.Change, c.Type)
}

// replace renames tmp over rel; a directory at rel (emptied by the
// deletions that ran first) is removed before.
func (p *promoter) replace(tmp, rel string) error {
	if fi, err := p.low.Lstat(rel); err == nil && fi.IsDir() {
		if err := p.low.Remove(rel); err != nil {
			_ = p.low.Remove(tmp)
			return err
		}
	}
	return p.low.Rename(tmp, rel)
}

// record remembers what a promoted entry left in the upper directory and
// the workspace: unchanged, it is not listed again.
func (p *promoter) record(c *StagedChange) error {
	cur, err := p.low.Stat(c.Path)
	if err != nil {
		return err
	}
	p.cp.After[c.Path] = cur
	// What was decided is what is recorded: an entry the sandbox put in
	// its place since (a kept process) differs from it and is listed
	// again, and a directory's mtime stays the one its entries were
	// listed at (an entry removed since is a deletion the next listing
	// finds). Recorded even when gone from the upper directory since: it
	// is what promotion put in the workspace (a deletion in an opaque
	// directory is listed only for such an entry).
	delete(p.s.st.HeldOut, c.Path) // promoted: in view again
	sealed := c.sealed || p.s.st.Promoted[c.Path].Sealed || p.s.hidden[c.Path].Sealed
	p.s.st.Promoted[c.Path] = promotedEntry{Upper: c.upper, Lower: cur, Sealed: sealed && cur.IsDir()}
	return nil
}

// keepBefore keeps the workspace entry rel as it is before promotion
// (see keepBeforeAt) and returns the sha256 of a file or link.
func (p *promoter) keepBefore(rel string) (string, error) {
	dfd, name, err := p.low.Parent(rel)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	defer unix.Close(dfd)
	dst := filepath.Join(p.before, filepath.FromSlash(rel))
	return keepBeforeAt(dfd, name, dst, func() error { return os.MkdirAll(filepath.Dir(dst), 0o700) })
}

func insideMoved(rel string, moved map[string]bool) bool {
	for d := path.Dir(rel); d != "."; d = path.Dir(d) {
		if moved[d] {
			return true
		}
	}
	return false
}

// tmpName is the temporary name a promoted file is written under, in
// the directory it goes to.
func tmpName(rel string, seq int) string {
	dir, name := path.Split(rel)
	t := fmt.Sprintf(".%s.agentbox-%d", name, seq)
	if len(t) > 255 {
		t = t[:255]
	}
	return dir + t
}
