package fstree

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// Entry is one entry met by Walk.
type Entry struct {
	Rel   string // slash-separated path from the root
	Name  string // the last element of Rel
	Dirfd int    // the directory holding it: open during the visit only
	Depth int    // 1 for the root's own entries
	Stamp
}

// Visit sees one entry and, for a directory, says whether to descend into
// it. With Options.Parallel it is called from several goroutines at once.
type Visit func(e *Entry) bool

// Options shape a walk. The zero value is a sequential walk in directory
// order with no bounds.
type Options struct {
	// Parallel > 1 walks subdirectories on up to that many goroutines
	// (the cost of a host walk is mostly system calls); the order of
	// visits is then undefined.
	Parallel int
	// Sorted visits each directory's entries in lexical order, parents
	// before children (a tar stream). Ignored with Parallel.
	Sorted bool
	// MaxEntries stops the walk after that many entries (0: no bound);
	// the result is then Incomplete.
	MaxEntries int
	// MaxDepth does not descend below that depth (0: no bound); a
	// directory left unvisited makes the result Incomplete.
	MaxDepth int
}

// Result says how a walk went.
type Result struct {
	Entries    int    // entries visited
	Incomplete string // why entries were missed; "" when none was
}

// ErrNotDir: the root is not a directory.
var ErrNotDir = errors.New("not a directory")

// Walk visits every entry below the directory root (not root itself),
// without following symbolic links, the root included when it is one.
// Only a root that cannot be opened is an error; anything missed below it
// is reported in Result.Incomplete.
func Walk(root string, o Options, fn Visit) (Result, error) {
	fd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP) {
			err = ErrNotDir
		}
		return Result{}, fmt.Errorf("walking %s: %w", root, err)
	}
	defer unix.Close(fd)
	return WalkFd(fd, o, fn)
}

// WalkFd is Walk below an open directory descriptor (left open).
func WalkFd(fd int, o Options, fn Visit) (Result, error) {
	w := &walker{o: o, fn: fn}
	if o.Parallel > 1 {
		w.sem = make(chan struct{}, o.Parallel-1)
	}
	names, err := readNames(fd, nil)
	if err != nil {
		return Result{}, fmt.Errorf("walking: %w", err)
	}
	w.entries(fd, "", 0, names)
	w.wg.Wait()
	return Result{Entries: int(w.n.Load()), Incomplete: w.incomplete}, nil
}

type walker struct {
	o    Options
	fn   Visit
	sem  chan struct{}
	wg   sync.WaitGroup
	n    atomic.Int64
	stop atomic.Bool

	mu         sync.Mutex
	incomplete string
}

// miss records the first reason entries were missed.
func (w *walker) miss(why string) {
	w.mu.Lock()
	if w.incomplete == "" {
		w.incomplete = why
	}
	w.mu.Unlock()
}

// unread records that rel could not be read, unless it is gone as what
// the walk saw (by a process the sandbox kept): removed before its lstat
// or open, or a directory removed after it was opened (ENOENT), or a
// directory replaced by a non-directory before its open (ENOTDIR; ELOOP
// for a link on some kernels). What is gone is not missed; fn sees what
// is there now on the next walk.
func (w *walker) unread(rel string, err error) {
	if !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.ENOTDIR) && !errors.Is(err, unix.ELOOP) {
		w.miss(fmt.Sprintf("%s could not be read (%v)", rel, err))
	}
}

func (w *walker) dir(fd int, rel string, depth int) {
	names, err := readNames(fd, nil)
	if err != nil {
		w.unread(rel, err)
		return
	}
	w.entries(fd, rel, depth, names)
}

func (w *walker) entries(fd int, rel string, depth int, names []string) {
	if w.o.Sorted && w.sem == nil {
		slices.Sort(names)
	}
	for _, name := range names {
		if w.stop.Load() {
			return
		}
		if n := w.n.Add(1); w.o.MaxEntries > 0 && n > int64(w.o.MaxEntries) {
			w.n.Add(-1)
			w.stop.Store(true)
			w.miss(fmt.Sprintf("more than %d entries", w.o.MaxEntries))
			return
		}
		child := name
		if rel != "" {
			child = rel + "/" + name
		}
		st, err := Lstat(fd, name)
		if err != nil {
			w.n.Add(-1)
			w.unread(child, err)
			continue
		}
		e := Entry{Rel: child, Name: name, Dirfd: fd, Depth: depth + 1, Stamp: st}
		if !w.fn(&e) || !st.IsDir() {
			continue
		}
		if w.o.MaxDepth > 0 && depth+1 >= w.o.MaxDepth {
			w.miss(fmt.Sprintf("%s is nested deeper than %d directories", child, w.o.MaxDepth))
			continue
		}
		cfd, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			w.unread(child, err)
			continue
		}
		if w.sem != nil {
			select {
			case w.sem <- struct{}{}:
				w.wg.Add(1)
				go func() {
					defer w.wg.Done()
					defer func() { <-w.sem }()
					defer unix.Close(cfd)
					w.dir(cfd, child, depth+1)
				}()
				continue
			default:
			}
		}
		w.dir(cfd, child, depth+1)
		unix.Close(cfd)
	}
}

// ReadNames lists the directory fd (from its start), "." and ".."
// excluded.
func ReadNames(fd int) ([]string, error) { return readNames(fd, nil) }

func readNames(fd int, names []string) ([]string, error) {
	if _, err := unix.Seek(fd, 0, io.SeekStart); err != nil {
		return nil, err
	}
	buf := make([]byte, 32<<10)
	for {
		k, err := unix.Getdents(fd, buf)
		if err != nil {
			return nil, err
		}
		if k <= 0 {
			return names, nil
		}
		_, _, names = unix.ParseDirent(buf[:k], -1, names)
	}
}

// RemoveAll removes name below dirfd: a directory with everything in it
// (through descriptors, never following a symbolic link), or any other
// entry. A missing entry is not an error.
func RemoveAll(dirfd int, name string) error {
	err := unix.Unlinkat(dirfd, name, 0)
	if err == nil || errors.Is(err, unix.ENOENT) {
		return nil
	}
	cfd, oerr := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if oerr != nil {
		return err
	}
	names, rerr := readNames(cfd, nil)
	for _, n := range names {
		if e := RemoveAll(cfd, n); e != nil && rerr == nil {
			rerr = e
		}
	}
	unix.Close(cfd)
	if err := unix.Unlinkat(dirfd, name, unix.AT_REMOVEDIR); err != nil && !errors.Is(err, unix.ENOENT) {
		if rerr != nil {
			return rerr
		}
		return err
	}
	return nil
}
