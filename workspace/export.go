package workspace

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/agentbox/agentbox/audit"
)

// Export copies the files a session added or modified in its workspace
// copy to filesDir/<path> (symlinks as symlinks). Deleted files have
// nothing to copy; the caller records them in its manifest.
func Export(copyDir, files string, changes []audit.FileChange) error {
	for _, ch := range changes {
		if ch.Change == audit.ChangeDeleted {
			continue
		}
		rel := filepath.FromSlash(ch.Path)
		if !filepath.IsLocal(rel) {
			return fmt.Errorf("exporting %q: not a path inside the workspace", ch.Path)
		}
		src := filepath.Join(copyDir, rel)
		dst := filepath.Join(files, rel)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return fmt.Errorf("exporting %s: %w", ch.Path, err)
		}
		fi, err := os.Lstat(src)
		if err != nil {
			continue // gone since the snapshot
		}
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			link, err := os.Readlink(src)
			if err != nil {
				return fmt.Errorf("exporting %s: %w", ch.Path, err)
			}
			if err := os.Symlink(link, dst); err != nil {
				return fmt.Errorf("exporting %s: %w", ch.Path, err)
			}
		case fi.Mode().IsRegular():
			if _, err := copyFile(src, dst, fi); err != nil {
				return fmt.Errorf("exporting %s: %w", ch.Path, err)
			}
		}
	}
	return nil
}
