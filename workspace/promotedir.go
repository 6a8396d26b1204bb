package workspace

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"sort"
	"sync"

	"github.com/agentbox/agentbox/internal/fstree"
	"golang.org/x/sys/unix"
)

// The files of a call are promoted per directory: each directory of the
// workspace and of the staging layer is opened once (resolved as
// fstree.Root resolves, no link followed) and its entries are created,
// renamed and removed with *at calls on those descriptors; directories go
// to a few workers at once (a large directory in chunks).
const (
	promoteWorkers = 4
	promoteChunk   = 256 // files per job: a large directory is shared out
	// cloneMin is the size from which a file is reflinked (FICLONE) or
	// copied in the kernel (copy_file_range) rather than through a buffer.
	cloneMin  = 1 << 20
	copyBufSz = 128 << 10
)

// promoRec is what one promoted (or removed) entry left, recorded once
// the workers are done.
type promoRec struct {
	path         string
	after, upper fstree.Stamp
	removed      bool
}

// dirJob is a run of changes in one directory.
type dirJob struct {
	dir string
	idx []int // into p.cp.Changes
}

// dirWork is one job's open directories.
type dirWork struct {
	p          *promoter
	dir        string
	lowfd      int // the workspace directory (O_PATH), -1 until opened
	lowErr     error
	upfd       int // the staging layer's directory (O_PATH), -1 until opened
	upErr      error
	beforeMade bool
	buf        []byte
	h          hash.Hash
	recs       []promoRec
}

// perDir runs fn on the changes idx, grouped by directory, on up to
// promoteWorkers goroutines; a change fn fails is held (promoter.fail).
func (p *promoter) perDir(idx []int, fn func(w *dirWork, c *StagedChange) error) {
	if len(idx) == 0 {
		return
	}
	byDir := map[string][]int{}
	for _, i := range idx {
		d := path.Dir(p.cp.Changes[i].Path)
		byDir[d] = append(byDir[d], i)
	}
	dirs := make([]string, 0, len(byDir))
	for d := range byDir {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs)
	var jobs []dirJob
	for _, d := range dirs {
		for l := byDir[d]; len(l) > 0; {
			n := min(len(l), promoteChunk)
			jobs = append(jobs, dirJob{dir: d, idx: l[:n]})
			l = l[n:]
		}
	}
	workers := min(promoteWorkers, len(jobs), max(2, runtime.GOMAXPROCS(0)))
	ch := make(chan dirJob)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			buf := make([]byte, copyBufSz)
			h := sha256.New()
			for j := range ch {
				w := &dirWork{p: p, dir: j.dir, lowfd: -1, upfd: -1, buf: buf, h: h}
				w.run(j.idx, fn)
				w.close()
				p.mu.Lock()
				p.recs = append(p.recs, w.recs...)
				p.mu.Unlock()
			}
		})
	}
	for _, j := range jobs {
		ch <- j
	}
	close(ch)
	wg.Wait()
}

func (w *dirWork) run(idx []int, fn func(w *dirWork, c *StagedChange) error) {
	p := w.p
	for _, i := range idx {
		c := &p.cp.Changes[i]
		p.mu.Lock()
		d := heldIn(c.Path, p.failed)
		p.mu.Unlock()
		switch {
		case d != "":
			p.holdNow(c, HazardParent, d+" is held")
		case p.full.Load():
			p.holdNow(c, HazardDiskFull, diskFullWhy)
		default:
			if err := fn(w, c); err != nil {
				p.fail(c, err)
			}
		}
	}
}

func (w *dirWork) close() {
	if w.lowfd >= 0 {
		unix.Close(w.lowfd)
	}
	if w.upfd >= 0 {
		unix.Close(w.upfd)
	}
}

// lower opens the workspace directory once; make creates it (and what
// is missing above it) when it is not there.
func (w *dirWork) lower(make bool) (int, error) {
	if w.lowfd >= 0 || w.lowErr != nil {
		return w.lowfd, w.lowErr
	}
	fd, err := w.p.low.OpenDir(w.dir)
	if make && errors.Is(err, fs.ErrNotExist) {
		if err = w.p.low.MkdirAll(w.dir, 0o755); err == nil {
			fd, err = w.p.low.OpenDir(w.dir)
		}
	}
	w.lowfd, w.lowErr = fd, err
	if err != nil {
		w.lowfd = -1
	}
	return w.lowfd, err
}

// upper opens the staging layer's directory once.
func (w *dirWork) upper() (int, error) {
	if w.upfd >= 0 || w.upErr != nil {
		return w.upfd, w.upErr
	}
	fd, err := w.p.up.OpenDir(w.dir)
	w.upfd, w.upErr = fd, err
	if err != nil {
		w.upfd = -1
	}
	return w.upfd, err
}

// keepBefore keeps the workspace entry name as it is before promotion.
func (w *dirWork) keepBefore(dfd int, c *StagedChange) (string, error) {
	dst := filepath.Join(w.p.before, filepath.FromSlash(c.Path))
	return keepBeforeAt(dfd, path.Base(c.Path), dst, func() error {
		if w.beforeMade {
			return nil
		}
		w.beforeMade = true
		return os.MkdirAll(filepath.Dir(dst), 0o700)
	})
}

// remove promotes the deletion of a file, link or special file.
func (w *dirWork) remove(c *StagedChange) error {
	dfd, err := w.lower(false)
	if errors.Is(err, fs.ErrNotExist) {
		w.recs = append(w.recs, promoRec{path: c.Path, removed: true})
		return nil // its directory is gone already
	}
	if err != nil {
		return err
	}
	sum, err := w.keepBefore(dfd, c)
	if err != nil {
		return err
	}
	c.Before = sum
	if err := removeAt(dfd, path.Base(c.Path)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return &fs.PathError{Op: "remove", Path: c.Path, Err: err}
	}
	w.recs = append(w.recs, promoRec{path: c.Path, removed: true})
	return nil
}

// removeAt removes name in dfd: a file, a link or an empty directory.
func removeAt(dfd int, name string) error {
	err := unix.Unlinkat(dfd, name, 0)
	if errors.Is(err, unix.EISDIR) || errors.Is(err, unix.EPERM) {
		if st, e := fstree.Lstat(dfd, name); e == nil && st.IsDir() {
			return unix.Unlinkat(dfd, name, unix.AT_REMOVEDIR)
		}
	}
	return err
}

// write promotes an added or modified regular file: copied from the
// staging layer to a temporary file beside it, re-decided on the bytes
// written, renamed into place.
func (w *dirWork) write(c *StagedChange) error {
	dfd, err := w.lower(true)
	if err != nil {
		return err
	}
	if c.Change != "added" {
		// The workspace's file is still what the listing saw (the host
		// may have edited it since, while the copies of a bulk call went
		// on): else a conflict, held, never overwritten.
		if c.lowSeen && c.lowIn && !c.low.IsDir() {
			cur, err := fstree.Lstat(dfd, path.Base(c.Path))
			if err != nil && !noEntry(err) {
				return err
			}
			if err != nil || fstree.Changed(c.low, cur) {
				w.p.holdNow(c, HazardConflict, changedMeanwhile)
				return nil
			}
		}
		sum, err := w.keepBefore(dfd, c)
		if err != nil {
			return err
		}
		c.Before = sum
	}
	ufd, err := w.upper()
	if err != nil {
		return err
	}
	name := path.Base(c.Path)
	// Through the staging layer's directory descriptor: a directory the
	// sandbox swaps for a symlink meanwhile cannot lead the read anywhere
	// else, and O_NOFOLLOW refuses a link in the file's place.
	in, err := openAt(ufd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if err != nil {
		return &fs.PathError{Op: "open", Path: c.Path, Err: err}
	}
	defer unix.Close(in)
	var st unix.Stat_t
	if err := unix.Fstat(in, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return fmt.Errorf("no longer a regular file in the staging layer")
	}
	// The stamp the upper file had before it was read: written to again
	// during the copy, it is listed again on the next call.
	upper := fstree.StampOf(&st)
	tmp := path.Base(tmpName(c.Path, w.p.cp.Seq))
	out, err := openAt(dfd, tmp, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL, 0o600)
	if errors.Is(err, unix.EEXIST) { // a leftover of a killed agentbox
		_ = unix.Unlinkat(dfd, tmp, 0)
		out, err = openAt(dfd, tmp, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL, 0o600)
	}
	if err != nil {
		return &fs.PathError{Op: "open", Path: path.Join(w.dir, tmp), Err: err}
	}
	done := false
	defer func() {
		if !done {
			_ = unix.Unlinkat(dfd, tmp, 0)
		}
		unix.Close(out)
	}()
	sum, n, prefix, err := w.copyData(out, in, st.Size)
	if err != nil {
		return err
	}
	if st.Mode&(unix.S_ISUID|unix.S_ISGID) != 0 {
		c.SetIDCut = true
	}
	// Set-id and sticky bits never come out. No fsync per file: the
	// rename is atomic against a killed agentbox (what the journal is
	// for); durability against a power cut is the filesystem's, as for
	// any editor's save.
	if err := unix.Fchmod(out, st.Mode&0o777); err != nil {
		return err
	}
	// Decided on the bytes written: what was judged by its content is
	// judged again on the copy, which nothing else writes.
	if rule, why := w.p.contentHazard(c, prefix); rule != "" {
		w.p.holdNow(c, rule, why+" (in the bytes promoted)")
		return nil
	}
	if c.Change == "added" {
		// Nothing was there when listed: whatever is there now is the
		// host's (a conflict), never replaced.
		err = unix.Renameat2(dfd, tmp, dfd, name, unix.RENAME_NOREPLACE)
		if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) { // a filesystem without it
			if _, lerr := fstree.Lstat(dfd, name); noEntry(lerr) {
				err = unix.Renameat(dfd, tmp, dfd, name)
			} else {
				err = unix.EEXIST
			}
		}
		if errors.Is(err, unix.EEXIST) {
			w.p.holdNow(c, HazardConflict, changedMeanwhile)
			return nil
		}
	} else {
		err = renameOver(dfd, tmp, name)
	}
	if err != nil {
		return &os.LinkError{Op: "rename", Old: path.Join(w.dir, tmp), New: c.Path, Err: err}
	}
	done = true
	if err := unix.Fstat(out, &st); err != nil {
		return err
	}
	c.After, c.Bytes = sum, n
	w.recs = append(w.recs, promoRec{path: c.Path, after: fstree.StampOf(&st), upper: upper})
	return nil
}

// changedMeanwhile is why a file the host changed between the listing
// and its copy is held.
const changedMeanwhile = "changed in the workspace while agentbox promoted the call's changes; the workspace's version is kept"

// renameOver renames tmp over name in dfd; a directory at name (emptied
// by the deletions that ran first) is removed before.
func renameOver(dfd int, tmp, name string) error {
	err := unix.Renameat(dfd, tmp, dfd, name)
	if errors.Is(err, unix.EISDIR) || errors.Is(err, unix.ENOTEMPTY) || errors.Is(err, unix.EEXIST) {
		if st, e := fstree.Lstat(dfd, name); e == nil && st.IsDir() {
			if err := unix.Unlinkat(dfd, name, unix.AT_REMOVEDIR); err != nil {
				return err
			}
			err = unix.Renameat(dfd, tmp, dfd, name)
		}
	}
	return err
}

// merge records what the workers promoted.
func (p *promoter) merge() {
	for _, r := range p.recs {
		if r.removed {
			delete(p.s.st.Promoted, r.path)
			continue
		}
		p.cp.After[r.path] = r.after
		p.s.st.Promoted[r.path] = promotedEntry{Upper: r.upper, Lower: r.after}
		delete(p.s.st.HeldOut, r.path) // promoted: in view again
	}
	p.recs = nil
}

// openAt is openat with O_CLOEXEC, retried when a signal interrupts it.
func openAt(dfd int, name string, flags int, perm uint32) (int, error) {
	for {
		fd, err := unix.Openat(dfd, name, flags|unix.O_CLOEXEC, perm)
		if err != unix.EINTR {
			return fd, err
		}
	}
}
