package workspace

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"runtime"
	"sort"
	"sync"

	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/internal/fstree"
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

// Stat is the stat data that tells whether an entry changed: the one
// Stamp of internal/fstree.
type Stat = fstree.Stamp

// StatOf extracts a Stat from a FileInfo (from os.Lstat and friends).
func StatOf(fi fs.FileInfo) Stat {
	return fstree.FromFileInfo(fi)
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
// all is an error. The walk runs on several goroutines (its cost is mostly
// system calls).
func SnapshotWith(dir string, lim SnapshotLimits) (Snap, error) {
	s := Snap{Dir: dir, lim: lim, Files: map[string]Stat{}}
	var mu sync.Mutex
	res, err := fstree.Walk(dir, fstree.Options{Parallel: max(runtime.GOMAXPROCS(0), 1), MaxEntries: lim.MaxEntries},
		func(e *fstree.Entry) bool {
			if !e.IsDir() {
				mu.Lock()
				s.Files[e.Rel] = e.Stamp
				mu.Unlock()
			}
			return true
		})
	if err != nil {
		return s, fmt.Errorf("snapshot of the workspace: %w", err)
	}
	s.Incomplete = res.Incomplete
	return s, nil
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
		out = append(out, audit.IncompleteMarker(why))
	}
	return out
}

// ChangeKind classifies the change from b to a (existed: b is valid):
// added, modified (content, type or symlink target), mode (permission
// bits only) or "" (nothing that matters, e.g. only the access time), by
// fstree's one rule. Without the old content at hand, a changed ctime
// with the same size, mtime and mode is counted as modified: the content
// may have been rewritten with its mtime restored.
func ChangeKind(b, a Stat, existed bool) string {
	switch {
	case !existed:
		return audit.ChangeAdded
	case !fstree.Changed(b, a):
		return ""
	case fstree.ModeOnly(b, a):
		return ChangeMode
	}
	return audit.ChangeModified
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
