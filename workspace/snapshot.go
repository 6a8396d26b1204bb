package workspace

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/agentbox/agentbox/audit"
	"golang.org/x/sys/unix"
)

// SnapshotLimits bound the work of Snapshot and Diff. Reaching any of them
// never goes unnoticed: the change list then ends with an "incomplete"
// entry (see Incomplete) and nothing is applied from it.
type SnapshotLimits struct {
	MaxEntries   int   // entries recorded; beyond, the snapshot is Incomplete
	MaxHashBytes int64 // bytes hashed by Diff in all; beyond, changed files are listed unhashed
}

// DefaultSnapshotLimits are used by Snapshot. They are far above any real
// workspace: a stat entry costs about 150 bytes.
var DefaultSnapshotLimits = SnapshotLimits{MaxEntries: 4_000_000, MaxHashBytes: 8 << 30}

// Stat is the part of an lstat(2) result that tells whether an entry
// changed: any difference means it may have.
type Stat struct {
	Mode  fs.FileMode
	Size  int64
	MTime int64 // ns
	CTime int64 // ns
	Ino   uint64
}

// StatOf extracts a Stat from a FileInfo.
func StatOf(fi fs.FileInfo) Stat {
	s := Stat{Mode: fi.Mode(), Size: fi.Size(), MTime: fi.ModTime().UnixNano()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		s.CTime = st.Ctim.Sec*1e9 + st.Ctim.Nsec
		s.Ino = st.Ino
	}
	return s
}

// Snap is the stat data of every entry below a workspace directory
// (directories excluded, .git included): slash-separated relative path ->
// Stat. Taking it reads no file contents.
type Snap struct {
	Dir        string
	Files      map[string]Stat
	Incomplete string // why the snapshot misses entries; "" when complete
	lim        SnapshotLimits
}

// Snapshot records the stat data below dir with the default limits.
func Snapshot(dir string) (Snap, error) { return SnapshotWith(dir, DefaultSnapshotLimits) }

// SnapshotWith is Snapshot with explicit limits. An entry that cannot be
// read makes the snapshot Incomplete; only a dir that cannot be walked at
// all is an error.
func SnapshotWith(dir string, lim SnapshotLimits) (Snap, error) {
	s := Snap{Dir: dir, lim: lim}
	if _, err := os.Lstat(dir); err != nil {
		return s, fmt.Errorf("snapshot of the workspace: %w", err)
	}
	w := &walker{lim: lim, sem: make(chan struct{}, max(runtime.GOMAXPROCS(0), 1))}
	err := w.walk(dir, "", nil)
	w.wg.Wait()
	if err == nil {
		err = w.err
	}
	if err != nil && !errors.Is(err, errStop) {
		return s, fmt.Errorf("snapshot of the workspace %s: %w", dir, err)
	}
	n := 0
	for _, part := range w.parts {
		n += len(part)
	}
	s.Files = make(map[string]Stat, n)
	for _, part := range w.parts {
		for _, e := range part {
			s.Files[e.path] = e.st
		}
	}
	s.Incomplete = w.incomplete
	return s, nil
}

var errStop = errors.New("stop")

type entry struct {
	path string
	st   Stat
}

// walker lists a tree on several goroutines (the cost is mostly system
// calls): a subdirectory gets its own goroutine while one is free.
type walker struct {
	lim        SnapshotLimits
	sem        chan struct{}
	wg         sync.WaitGroup
	count      atomic.Int64
	mu         sync.Mutex
	parts      [][]entry
	incomplete string
	err        error
}

func (w *walker) fail(why string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.incomplete == "" {
		w.incomplete = why
	}
}

// walk records the entries below the directory abs (rel from the root)
// into out (nil: a part of its own): one open and getdents per directory,
// one fstatat relative to it per entry.
func (w *walker) walk(abs, rel string, out *[]entry) error {
	if out == nil {
		part := make([]entry, 0, 256)
		defer func() {
			w.mu.Lock()
			w.parts = append(w.parts, part)
			w.mu.Unlock()
		}()
		out = &part
	}
	f, err := os.Open(abs)
	if err != nil {
		if rel == "" {
			return err
		}
		w.fail(fmt.Sprintf("%s could not be read (%v)", abs, err))
		return nil
	}
	defer f.Close()
	fd := int(f.Fd())
	for {
		ents, err := f.ReadDir(1024)
		for _, e := range ents {
			name := e.Name()
			p := name
			if rel != "" {
				p = rel + "/" + name
			}
			if e.IsDir() {
				select {
				case w.sem <- struct{}{}:
					w.wg.Add(1)
					go func() {
						defer w.wg.Done()
						defer func() { <-w.sem }()
						if err := w.walk(abs+"/"+name, p, nil); err != nil {
							w.mu.Lock()
							w.err = err
							w.mu.Unlock()
						}
					}()
				default:
					if err := w.walk(abs+"/"+name, p, out); err != nil {
						return err
					}
				}
				continue
			}
			if w.count.Add(1) > int64(w.lim.MaxEntries) {
				w.fail(fmt.Sprintf("more than %d entries", w.lim.MaxEntries))
				return errStop
			}
			var st unix.Stat_t
			if err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
				if !errors.Is(err, unix.ENOENT) {
					w.fail(fmt.Sprintf("%s could not be read (%v)", abs+"/"+name, err))
				}
				continue
			}
			*out = append(*out, entry{p, statFromUnix(&st)})
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			w.fail(fmt.Sprintf("%s could not be read (%v)", abs, err))
			return nil
		}
	}
}

// statFromUnix is StatOf for a raw stat result.
func statFromUnix(st *unix.Stat_t) Stat {
	mode := fs.FileMode(st.Mode & 0o777)
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		mode |= fs.ModeDir
	case unix.S_IFLNK:
		mode |= fs.ModeSymlink
	case unix.S_IFIFO:
		mode |= fs.ModeNamedPipe
	case unix.S_IFSOCK:
		mode |= fs.ModeSocket
	case unix.S_IFCHR:
		mode |= fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFBLK:
		mode |= fs.ModeDevice
	}
	if st.Mode&unix.S_ISUID != 0 {
		mode |= fs.ModeSetuid
	}
	if st.Mode&unix.S_ISGID != 0 {
		mode |= fs.ModeSetgid
	}
	if st.Mode&unix.S_ISVTX != 0 {
		mode |= fs.ModeSticky
	}
	return Stat{Mode: mode, Size: st.Size, MTime: st.Mtim.Nano(), CTime: st.Ctim.Nano(), Ino: st.Ino}
}

func relSlash(dir, p string) string {
	rel, err := filepath.Rel(dir, p)
	if err != nil {
		return p
	}
	return filepath.ToSlash(rel)
}

// Diff lists what changed between two snapshots of the same directory,
// sorted by path: additions, edits, deletions, mode changes and symlink
// changes. Only entries whose stat data differ are read (hashed), so its
// cost follows the number of changes. When either snapshot is incomplete
// or a bound was reached the list ends with an incomplete marker.
func Diff(before, after Snap) []audit.FileChange {
	h := hasher{max: after.lim.MaxHashBytes}
	if h.max <= 0 {
		h.max = DefaultSnapshotLimits.MaxHashBytes
	}
	var out []audit.FileChange
	for p, a := range after.Files {
		b, ok := before.Files[p]
		if ok && b == a {
			continue
		}
		kind := ChangeKind(b, a, ok)
		if kind == "" {
			continue
		}
		c := audit.FileChange{Path: p, Bytes: a.Size, Change: kind}
		c.SHA256 = h.sum(filepath.Join(after.Dir, filepath.FromSlash(p)), a)
		out = append(out, c)
	}
	for p, b := range before.Files {
		if _, ok := after.Files[p]; !ok && after.Incomplete == "" {
			out = append(out, audit.FileChange{Path: p, Bytes: b.Size, Change: audit.ChangeDeleted})
		}
	}
	sortChanges(out)
	why := before.Incomplete
	if why == "" {
		why = after.Incomplete
	}
	if why == "" {
		why = h.incomplete
	}
	if why != "" {
		out = append(out, IncompleteMarker(why))
	}
	return out
}

// ChangeKind classifies the change from b to a (existed: b is valid):
// added, modified (content, type or symlink target), mode (permission
// bits only) or "" (nothing that matters, e.g. only the access time).
// Without the old content at hand, a changed ctime with the same size,
// mtime and mode is counted as modified: the content may have been
// rewritten with its mtime restored.
func ChangeKind(b, a Stat, existed bool) string {
	switch {
	case !existed:
		return audit.ChangeAdded
	case b.Mode.Type() != a.Mode.Type() || b.Size != a.Size || b.MTime != a.MTime || b.Ino != a.Ino:
		return audit.ChangeModified
	case b.Mode != a.Mode:
		return ChangeMode
	case b.CTime != a.CTime:
		return audit.ChangeModified
	}
	return ""
}

func sortChanges(out []audit.FileChange) {
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
}

// SnapshotJob is a snapshot taken in the background (e.g. while the
// sandbox starts); Wait returns it. Whoever starts one must Wait.
type SnapshotJob struct {
	done chan struct{}
	snap Snap
	err  error
}

// StartSnapshot begins Snapshot(dir) on its own goroutine.
func StartSnapshot(dir string) *SnapshotJob {
	j := &SnapshotJob{done: make(chan struct{})}
	go func() {
		defer close(j.done)
		j.snap, j.err = Snapshot(dir)
	}()
	return j
}

// Wait returns the snapshot once it is taken. It may be called many times.
func (j *SnapshotJob) Wait() (Snap, error) {
	<-j.done
	return j.snap, j.err
}
