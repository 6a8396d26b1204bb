package transfer

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"

	"github.com/agentbox/agentbox/sandbox"
)

// ApplyOptions bound and filter one Apply.
type ApplyOptions struct {
	// Deny names paths that are never written, created or removed: each
	// attempt is dropped and reported as an alarm.
	Deny Matcher
	// MaxBytes bounds the content written (0: no bound); MaxEntries the
	// entries read (0: DefaultMaxEntries).
	MaxBytes   int64
	MaxEntries int
}

// Apply reads a tar stream (PackTree's or PackChanges') and applies it
// below root. It stops at the first malformed entry (ErrHostile) or bound
// (ErrTooLarge); what was applied before stays.
func Apply(root *os.Root, r io.Reader, o ApplyOptions) (Report, error) {
	a := &applier{root: root, o: o}
	if a.o.MaxEntries <= 0 {
		a.o.MaxEntries = DefaultMaxEntries
	}
	err := a.run(tar.NewReader(r))
	// Directory permissions last, deepest first: a read-only directory
	// could not be filled.
	for i := len(a.dirModes) - 1; i >= 0; i-- {
		if cerr := root.Chmod(a.dirModes[i].name, a.dirModes[i].mode); cerr != nil && err == nil {
			err = fmt.Errorf("setting the mode of %s: %w", a.dirModes[i].name, cerr)
		}
	}
	return a.rep, err
}

type dirMode struct {
	name string
	mode fs.FileMode
}

type applier struct {
	root     *os.Root
	o        ApplyOptions
	rep      Report
	dirModes []dirMode
	n        int
}

func (a *applier) run(tr *tar.Reader) error {
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%w: %w", ErrHostile, err)
		}
		if a.n++; a.n > a.o.MaxEntries {
			return fmt.Errorf("%w: more than %d entries", ErrTooLarge, a.o.MaxEntries)
		}
		name := strings.TrimSuffix(hdr.Name, "/")
		if err := CheckName(name); err != nil {
			return err
		}
		if err := a.entry(tr, hdr, name); err != nil {
			return err
		}
	}
}

func (a *applier) alarm(name, what, action, rule string) {
	a.rep.Alarms = append(a.rep.Alarms, sandbox.Alarm{Path: name, What: what, Action: action, Rule: rule})
}

// entry applies one header (its content is read from tr).
func (a *applier) entry(tr *tar.Reader, hdr *tar.Header, name string) error {
	del := hdr.Typeflag == TypeDelete
	if ok, err := a.parents(name, !del); err != nil || !ok {
		return err // a deletion below a missing directory: nothing to do
	}
	existing, lerr := a.root.Lstat(name)
	exists := lerr == nil
	if a.o.Deny != nil {
		if rule := a.o.Deny(name); rule != "" {
			if exists && a.unchanged(tr, hdr, name, existing) {
				return nil // rewritten as it was (the executor's effects check restored it)
			}
			what := "created"
			switch {
			case del:
				what = "removed"
			case exists:
				what = "changed"
			}
			if !del || exists {
				a.alarm(name, what, "dropped", rule)
			}
			return nil
		}
	}
	if del {
		if exists {
			a.rep.Deleted++
			return a.removeTree(name)
		}
		return nil
	}
	mode := fs.FileMode(hdr.Mode).Perm()
	if hdr.Mode&0o6000 != 0 {
		a.alarm(name, "setid", "cleared", "")
	}
	switch hdr.Typeflag {
	case TypeChmod:
		if exists && existing.Mode().IsRegular() {
			if err := a.root.Chmod(name, mode); err != nil {
				return fmt.Errorf("setting the mode of %s: %w", name, err)
			}
			a.rep.Files++
		}
		return nil
	case tar.TypeDir:
		if exists && !existing.IsDir() {
			if err := a.removeTree(name); err != nil {
				return err
			}
			exists = false
		}
		if !exists {
			if err := a.root.Mkdir(name, 0o700); err != nil {
				return fmt.Errorf("creating %s: %w", name, err)
			}
		}
		a.rep.Dirs++
		a.dirModes = append(a.dirModes, dirMode{name, mode})
		return nil
	case tar.TypeSymlink:
		if hdr.Linkname == "" || len(hdr.Linkname) > maxName || strings.ContainsRune(hdr.Linkname, 0) {
			return fmt.Errorf("%w: bad symlink target for %q", ErrHostile, name)
		}
		if exists {
			if err := a.removeTree(name); err != nil {
				return err
			}
		}
		if err := a.root.Symlink(hdr.Linkname, name); err != nil {
			return fmt.Errorf("creating symlink %s: %w", name, err)
		}
		a.rep.Links++
		return nil
	case tar.TypeReg:
		return a.file(tr, hdr, name, mode, exists && existing.IsDir())
	}
	// Hard links, devices, FIFOs and anything else: never carried.
	a.alarm(name, "device", "dropped", "")
	return nil
}

// unchanged reports whether the entry says what the host has already: the
// same type and mode, and for a regular file the same content (read from
// tr, which the entry then no longer needs).
func (a *applier) unchanged(tr io.Reader, hdr *tar.Header, name string, fi fs.FileInfo) bool {
	mode := fs.FileMode(hdr.Mode).Perm()
	switch hdr.Typeflag {
	case tar.TypeDir:
		return fi.IsDir() && fi.Mode().Perm() == mode
	case TypeChmod:
		return fi.Mode().IsRegular() && fi.Mode().Perm() == mode
	case tar.TypeSymlink:
		l, err := a.root.Readlink(name)
		return err == nil && fi.Mode()&fs.ModeSymlink != 0 && l == hdr.Linkname
	case tar.TypeReg:
		if !fi.Mode().IsRegular() || fi.Mode().Perm() != mode || fi.Size() != hdr.Size {
			return false
		}
		f, err := a.root.Open(name)
		if err != nil {
			return false
		}
		defer f.Close()
		return sameContent(f, io.LimitReader(tr, hdr.Size))
	}
	return false
}

func sameContent(a, b io.Reader) bool {
	ba, bb := make([]byte, 32<<10), make([]byte, 32<<10)
	for {
		na, ea := io.ReadFull(a, ba)
		nb, eb := io.ReadFull(b, bb)
		if na != nb || !bytes.Equal(ba[:na], bb[:nb]) {
			return false
		}
		if ea != nil || eb != nil {
			return (ea == io.EOF || ea == io.ErrUnexpectedEOF) && (eb == io.EOF || eb == io.ErrUnexpectedEOF)
		}
	}
}

// parents makes sure every directory above name is a real directory (not a
// symbolic link the stream planted), creating missing ones when create is
// set; else ok is false when one is missing.
func (a *applier) parents(name string, create bool) (ok bool, err error) {
	dir := path.Dir(name)
	if dir == "." {
		return true, nil
	}
	var chain []string
	for p := dir; p != "."; p = path.Dir(p) {
		chain = append(chain, p)
	}
	for i := len(chain) - 1; i >= 0; i-- {
		p := chain[i]
		fi, err := a.root.Lstat(p)
		switch {
		case errors.Is(err, fs.ErrNotExist) && !create:
			return false, nil
		case errors.Is(err, fs.ErrNotExist):
			if err := a.root.Mkdir(p, 0o755); err != nil {
				return false, fmt.Errorf("creating %s: %w", p, err)
			}
		case err != nil:
			return false, fmt.Errorf("reading %s: %w", p, err)
		case !fi.IsDir():
			return false, fmt.Errorf("%w: %q lies below %q, which is not a directory", ErrHostile, name, p)
		}
	}
	return true, nil
}

// file writes a regular file atomically: a temporary file beside it, then
// a rename over whatever was there.
func (a *applier) file(tr *tar.Reader, hdr *tar.Header, name string, mode fs.FileMode, wasDir bool) error {
	if hdr.Size < 0 || a.o.MaxBytes > 0 && a.rep.Bytes+hdr.Size > a.o.MaxBytes {
		return fmt.Errorf("%w: more than %d MiB of files", ErrTooLarge, a.o.MaxBytes>>20)
	}
	tmp := path.Join(path.Dir(name), ".agentbox-transfer-"+fmt.Sprint(a.n))
	f, err := a.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("writing %s: %w", name, err)
	}
	n, err := io.Copy(f, io.LimitReader(tr, hdr.Size))
	if err == nil && n != hdr.Size {
		err = fmt.Errorf("%w: %s is short", ErrHostile, name)
	}
	if err == nil {
		err = f.Chmod(mode)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && wasDir {
		err = a.removeTree(name)
	}
	if err == nil {
		err = a.root.Rename(tmp, name)
	}
	if err != nil {
		_ = a.root.Remove(tmp)
		return fmt.Errorf("writing %s: %w", name, err)
	}
	a.rep.Bytes += n
	a.rep.Files++
	if !hdr.ModTime.IsZero() {
		_ = a.root.Chtimes(name, hdr.ModTime, hdr.ModTime)
	}
	return nil
}

// removeTree removes name and, for a directory, its tree, except what the
// deny matcher protects (reported, and kept with its parents).
func (a *applier) removeTree(name string) error {
	fi, err := a.root.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("removing %s: %w", name, err)
	}
	if a.o.Deny != nil {
		if rule := a.o.Deny(name); rule != "" {
			a.alarm(name, "removed", "dropped", rule)
			return nil
		}
	}
	if fi.IsDir() {
		_ = a.root.Chmod(name, 0o700) // a read-only directory cannot be emptied
		d, err := a.root.Open(name)
		if err != nil {
			return fmt.Errorf("removing %s: %w", name, err)
		}
		ents, err := d.ReadDir(-1)
		d.Close()
		if err != nil {
			return fmt.Errorf("removing %s: %w", name, err)
		}
		for _, e := range ents {
			if err := a.removeTree(path.Join(name, e.Name())); err != nil {
				return err
			}
		}
	}
	if err := a.root.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
		if fi.IsDir() && a.o.Deny != nil {
			return nil // it keeps a protected entry
		}
		return fmt.Errorf("removing %s: %w", name, err)
	}
	return nil
}
