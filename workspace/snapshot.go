package workspace

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/agentbox/agentbox/audit"
)

// SnapshotLimits bound the work of Snapshot.
type SnapshotLimits struct {
	MaxFiles      int   // entries recorded; beyond, the snapshot is Incomplete
	MaxFileBytes  int64 // larger files are compared by size and mtime, not hashed
	MaxTotalBytes int64 // bytes hashed in all; beyond, files compare by size and mtime
}

// DefaultSnapshotLimits are used by Snapshot.
var DefaultSnapshotLimits = SnapshotLimits{MaxFiles: 20000, MaxFileBytes: 64 << 20, MaxTotalBytes: 512 << 20}

// FileSum is one entry of a Snap. SHA256 is empty for a file that was not
// hashed (too large); symlinks are hashed as "symlink:" + their target and
// never followed.
type FileSum struct {
	SHA256 string
	Size   int64
	stamp  string // size and mtime, for files not hashed
}

// Snap is the state of a workspace on the host: slash-separated relative
// path -> FileSum. .git directories are skipped.
type Snap struct {
	Files      map[string]FileSum
	Incomplete bool // a limit was reached; Diff may miss changes
}

// Snapshot hashes the regular files and symlinks below dir, with the
// default limits.
func Snapshot(dir string) (Snap, error) { return SnapshotWith(dir, DefaultSnapshotLimits) }

// SnapshotWith is Snapshot with explicit limits. Unreadable entries are
// skipped; only a dir that cannot be walked at all is an error.
func SnapshotWith(dir string, lim SnapshotLimits) (Snap, error) {
	s := Snap{Files: map[string]FileSum{}}
	if _, err := os.Lstat(dir); err != nil {
		return s, fmt.Errorf("snapshot of the workspace: %w", err)
	}
	var hashed int64
	errStop := errors.New("stop")
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == dir {
				return err
			}
			return nil // unreadable: skip
		}
		if d.IsDir() {
			if d.Name() == ".git" && p != dir {
				return filepath.SkipDir
			}
			return nil
		}
		if len(s.Files) >= lim.MaxFiles {
			s.Incomplete = true
			return errStop
		}
		rel, rerr := filepath.Rel(dir, p)
		if rerr != nil {
			return nil
		}
		rel = filepath.ToSlash(rel)
		info, ierr := d.Info()
		if ierr != nil {
			return nil
		}
		switch {
		case info.Mode()&fs.ModeSymlink != 0:
			target, lerr := os.Readlink(p)
			if lerr != nil {
				return nil
			}
			sum := sha256.Sum256([]byte("symlink:" + target))
			s.Files[rel] = FileSum{SHA256: hex.EncodeToString(sum[:]), Size: int64(len(target))}
		case info.Mode().IsRegular():
			fsum := FileSum{Size: info.Size(), stamp: fmt.Sprintf("%d@%s", info.Size(), info.ModTime().UTC().Format(time.RFC3339Nano))}
			if info.Size() <= lim.MaxFileBytes && hashed+info.Size() <= lim.MaxTotalBytes {
				if h, n, herr := hashFile(p, info); herr == nil {
					fsum.SHA256, fsum.Size = h, n
					hashed += n
				}
			} else {
				s.Incomplete = s.Incomplete || hashed+info.Size() > lim.MaxTotalBytes
			}
			s.Files[rel] = fsum
		}
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		return s, fmt.Errorf("snapshot of the workspace %s: %w", dir, err)
	}
	return s, nil
}

// hashFile hashes p, refusing to follow a symlink or block on a FIFO that
// replaced the file after it was listed.
func hashFile(p string, listed fs.FileInfo) (string, int64, error) {
	f, err := os.OpenFile(p, os.O_RDONLY|OpenNoFollow, 0)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", 0, err
	}
	if !fi.Mode().IsRegular() || !os.SameFile(fi, listed) {
		return "", 0, errors.New("file changed while listed")
	}
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return "", 0, err
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}

// Diff lists the files added, modified and deleted between two snapshots,
// sorted by path.
func Diff(before, after Snap) []audit.FileChange {
	var out []audit.FileChange
	for p, a := range after.Files {
		b, ok := before.Files[p]
		switch {
		case !ok:
			out = append(out, audit.FileChange{Path: p, SHA256: a.SHA256, Bytes: a.Size, Change: audit.ChangeAdded})
		case changed(b, a):
			out = append(out, audit.FileChange{Path: p, SHA256: a.SHA256, Bytes: a.Size, Change: audit.ChangeModified})
		}
	}
	for p, b := range before.Files {
		if _, ok := after.Files[p]; !ok && !after.Incomplete {
			out = append(out, audit.FileChange{Path: p, Bytes: b.Size, Change: audit.ChangeDeleted})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

func changed(b, a FileSum) bool {
	if b.SHA256 != "" && a.SHA256 != "" {
		return b.SHA256 != a.SHA256
	}
	return b.Size != a.Size || b.stamp != a.stamp
}
