package workspace

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"syscall"

	"github.com/agentbox/agentbox/audit"
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
	s := Snap{Dir: dir, Files: map[string]Stat{}, lim: lim}
	if _, err := os.Lstat(dir); err != nil {
		return s, fmt.Errorf("snapshot of the workspace: %w", err)
	}
	errStop := errors.New("stop")
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == dir {
				return err
			}
			s.incomplete(fmt.Sprintf("%s could not be read (%v)", p, err))
			return nil
		}
		if d.IsDir() {
			return nil
		}
		if len(s.Files) >= lim.MaxEntries {
			s.incomplete(fmt.Sprintf("more than %d entries", lim.MaxEntries))
			return errStop
		}
		info, ierr := d.Info()
		if ierr != nil {
			if !errors.Is(ierr, fs.ErrNotExist) {
				s.incomplete(fmt.Sprintf("%s could not be read (%v)", p, ierr))
			}
			return nil
		}
		s.Files[relSlash(dir, p)] = StatOf(info)
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		return s, fmt.Errorf("snapshot of the workspace %s: %w", dir, err)
	}
	return s, nil
}

func (s *Snap) incomplete(why string) {
	if s.Incomplete == "" {
		s.Incomplete = why
	}
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
