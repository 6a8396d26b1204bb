package transfer

import (
	"archive/tar"
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"syscall"
	"time"

	"github.com/agentbox/agentbox/internal/fstree"
)

// Snap is the state of a tree: a stamp per path (relative, slash-separated).
type Snap map[string]fstree.Stamp

// Snapshot records the tree below dir. It visits at most max entries (0:
// DefaultMaxEntries).
func Snapshot(dir string, max int) (Snap, error) {
	s := Snap{}
	err := walk(dir, max, func(rel string, st fstree.Stamp) { s[rel] = st })
	return s, err
}

// walk visits every entry below dir, parents before children, in lexical
// order, through directory descriptors, without following symbolic links.
// A tree it cannot read whole is an error.
func walk(dir string, max int, fn func(rel string, st fstree.Stamp)) error {
	if max <= 0 {
		max = DefaultMaxEntries
	}
	res, err := fstree.Walk(dir, fstree.Options{Sorted: true, MaxEntries: max}, func(e *fstree.Entry) bool {
		fn(e.Rel, e.Stamp)
		return true
	})
	switch {
	case err != nil:
		return err
	case res.Incomplete != "" && res.Entries >= max:
		return fmt.Errorf("%w: %s", ErrTooLarge, res.Incomplete)
	case res.Incomplete != "":
		return fmt.Errorf("reading %s: %s", dir, res.Incomplete)
	}
	return nil
}

// PackChanges writes what changed below dir since base as a tar stream:
// deletions first (the topmost path of each deleted tree), then every
// added or changed entry, parents first. Special files are written as
// headers only, so that the receiver can report them. It returns the new
// state, to compare the next pack against. More than max bytes of content
// (0: no bound) fail with ErrTooLarge.
func PackChanges(w io.Writer, dir string, base Snap, max int64, maxEntries int) (Snap, Stats, error) {
	var st Stats
	cur := Snap{}
	type entry struct {
		rel      string
		s        fstree.Stamp
		modeOnly bool
	}
	var changed []entry
	err := walk(dir, maxEntries, func(rel string, now fstree.Stamp) {
		cur[rel] = now
		if old, ok := base[rel]; !ok || fstree.Changed(old, now) {
			changed = append(changed, entry{rel, now, ok && fstree.ModeOnly(old, now)})
		}
	})
	if err != nil {
		return nil, st, err
	}
	tw := tar.NewWriter(w)
	var gone []string
	for rel := range base {
		if _, ok := cur[rel]; !ok {
			gone = append(gone, rel)
		}
	}
	slices.Sort(gone)
	sent := map[string]bool{}
	for _, rel := range gone {
		if insideAny(rel, sent) {
			continue // inside a deleted tree already sent
		}
		sent[rel] = true
		if err := tw.WriteHeader(&tar.Header{Name: rel, Typeflag: TypeDelete}); err != nil {
			return nil, st, err
		}
		st.Entries++
	}
	for _, e := range changed {
		if e.modeOnly {
			if err := tw.WriteHeader(&tar.Header{Name: e.rel, Typeflag: TypeChmod, Mode: int64(e.s.Mode & 0o7777)}); err != nil {
				return nil, st, err
			}
			st.Entries++
			continue
		}
		if err := packChange(tw, dir, e.rel, e.s, &st, max); err != nil {
			return nil, st, err
		}
	}
	return cur, st, tw.Close()
}

// insideAny reports whether a directory above rel is in set.
func insideAny(rel string, set map[string]bool) bool {
	for p := path.Dir(rel); p != "."; p = path.Dir(p) {
		if set[p] {
			return true
		}
	}
	return false
}

func packChange(tw *tar.Writer, dir, rel string, s fstree.Stamp, st *Stats, max int64) error {
	hdr := &tar.Header{Name: rel, Mode: int64(s.Mode & 0o7777), ModTime: time.Unix(0, s.MTime).Truncate(time.Microsecond)}
	switch s.Mode & syscall.S_IFMT {
	case syscall.S_IFDIR:
		hdr.Typeflag = tar.TypeDir
	case syscall.S_IFLNK:
		link, err := os.Readlink(dir + "/" + rel)
		if err != nil {
			return nil // gone meanwhile: the next pack sees it
		}
		hdr.Typeflag, hdr.Linkname = tar.TypeSymlink, link
	case syscall.S_IFREG:
		f, err := os.OpenFile(dir+"/"+rel, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
		if err != nil {
			return nil
		}
		defer f.Close()
		fi, err := f.Stat()
		if err != nil || !fi.Mode().IsRegular() {
			return nil
		}
		st.Bytes += fi.Size()
		if max > 0 && st.Bytes > max {
			return fmt.Errorf("%w: more than %d MiB of changed files", ErrTooLarge, max>>20)
		}
		hdr.Typeflag, hdr.Size = tar.TypeReg, fi.Size()
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		st.Entries++
		return copyExactly(tw, f, fi.Size())
	default:
		// A device node, FIFO or socket: a header only; the receiver
		// reports and drops it.
		hdr.Typeflag = tar.TypeFifo
		if m := s.Mode & syscall.S_IFMT; m == syscall.S_IFCHR {
			hdr.Typeflag = tar.TypeChar
		} else if m == syscall.S_IFBLK {
			hdr.Typeflag = tar.TypeBlock
		}
		st.Skipped++
	}
	st.Entries++
	return tw.WriteHeader(hdr)
}
