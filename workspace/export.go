package workspace

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/internal/fstree"
)

// Export copies the files a session added or modified in its workspace
// copy to filesDir/<path> (symlinks as symlinks). Deleted files have
// nothing to copy; the caller records them in its manifest. Both sides
// are reached through descriptors that never follow a link; a link whose
// target leaves the workspace by its text (decided and held already when
// the copy was staged) is never exported.
func Export(copyDir, files string, changes []audit.FileChange) error {
	if err := os.MkdirAll(files, 0o755); err != nil {
		return fmt.Errorf("exporting the changed files: %w", err)
	}
	from, err := fstree.OpenRoot(copyDir)
	if err != nil {
		return fmt.Errorf("exporting the changed files: %w", err)
	}
	defer from.Close()
	to, err := fstree.OpenRoot(files)
	if err != nil {
		return fmt.Errorf("exporting the changed files: %w", err)
	}
	defer to.Close()
	for _, ch := range changes {
		if ch.Change == audit.ChangeDeleted {
			continue
		}
		if !filepath.IsLocal(filepath.FromSlash(ch.Path)) {
			return fmt.Errorf("exporting %q: not a path inside the workspace", ch.Path)
		}
		if err := exportOne(from, to, ch.Path); err != nil {
			return fmt.Errorf("exporting %s: %w", ch.Path, err)
		}
	}
	return nil
}

func exportOne(from, to *fstree.Root, rel string) error {
	fi, err := from.Lstat(rel)
	if err != nil {
		return nil // gone since the snapshot
	}
	if d := filepath.Dir(rel); d != "." {
		if err := to.MkdirAll(filepath.ToSlash(d), 0o755); err != nil {
			return err
		}
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		link, err := from.Readlink(rel)
		if err != nil {
			return err
		}
		if _, _, ok := linkText(link, strings.Count(rel, "/")); !ok {
			return nil
		}
		return to.Symlink(link, rel)
	case fi.Mode().IsRegular():
		in, err := from.OpenFile(rel, os.O_RDONLY|fstree.OpenNoFollow, 0)
		if err != nil {
			return err
		}
		defer in.Close()
		if st, err := in.Stat(); err != nil || !st.Mode().IsRegular() {
			return errors.New("no longer a regular file in the copy")
		}
		out, err := to.OpenFile(rel, os.O_WRONLY|os.O_CREATE|os.O_EXCL, fi.Mode().Perm())
		if err != nil {
			return err
		}
		_, err = io.Copy(out, in)
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		return err
	}
	return nil
}
