package workspace

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// DefaultMaxCopyBytes caps the size of a workspace that is copied.
const DefaultMaxCopyBytes int64 = 1 << 30

// ErrTooLarge is returned for a source workspace over the size cap.
var ErrTooLarge = errors.New("workspace too large to copy")

// TreeSize adds up the bytes of the regular files below dir (symlinks are
// not followed) and fails as soon as the total passes max.
func TreeSize(dir string, max int64) (int64, error) {
	var total int64
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("reading %s: %w; make it readable or remove it from the workspace", p, err)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return fmt.Errorf("reading %s: %w", p, err)
		}
		total += fi.Size()
		if total > max {
			return fmt.Errorf("%w: %s holds more than %d MiB; copy mode refuses it (narrow the workspace, or raise --max-copy)", ErrTooLarge, dir, max>>20)
		}
		return nil
	})
	return total, err
}

// CopyTree copies the directory src to dst, which must not exist. Regular
// files, directories and symlinks are copied with their permission bits
// (symlinks as symlinks: never followed, so nothing outside src is read);
// FIFOs are recreated; sockets and devices are refused. The copy stops with
// ErrTooLarge once more than max bytes were copied.
func CopyTree(src, dst string, max int64) error {
	_, err := CopyTreeReflink(src, dst, max)
	return err
}

// CopyTreeReflink is CopyTree; files share their blocks with the source
// (FICLONE) where the filesystem supports it, and reflinked says so.
func CopyTreeReflink(src, dst string, max int64) (reflinked bool, err error) {
	if max <= 0 {
		max = DefaultMaxCopyBytes
	}
	fi, err := os.Lstat(src)
	if err != nil {
		return false, fmt.Errorf("workspace %s: %w", src, err)
	}
	if !fi.IsDir() {
		return false, fmt.Errorf("workspace %s is not a directory", src)
	}
	type dirMode struct {
		path string
		mode fs.FileMode
	}
	var dirs []dirMode // permissions are set last, so read-only dirs can be filled
	var total int64
	files, cloned := 0, 0
	err = filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("reading %s: %w", p, err)
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return fmt.Errorf("reading %s: %w", p, err)
		}
		mode := info.Mode()
		switch {
		case mode.IsDir():
			if err := os.Mkdir(target, 0o700); err != nil {
				return fmt.Errorf("copying the workspace: %w", err)
			}
			dirs = append(dirs, dirMode{target, mode.Perm()})
		case mode&fs.ModeSymlink != 0:
			link, err := os.Readlink(p)
			if err != nil {
				return fmt.Errorf("reading symlink %s: %w", p, err)
			}
			if err := os.Symlink(link, target); err != nil {
				return fmt.Errorf("copying the workspace: %w", err)
			}
		case mode.IsRegular():
			total += info.Size()
			if total > max {
				return fmt.Errorf("%w: %s holds more than %d MiB; copy mode refuses it (narrow the workspace, or raise --max-copy)", ErrTooLarge, src, max>>20)
			}
			files++
			ok, err := copyFile(p, target, info)
			if err != nil {
				return err
			}
			if ok {
				cloned++
			}
		case mode&fs.ModeNamedPipe != 0:
			if err := syscall.Mkfifo(target, uint32(mode.Perm())); err != nil {
				return fmt.Errorf("copying fifo %s: %w", p, err)
			}
		default:
			return fmt.Errorf("workspace %s holds %s, a %s, which cannot be copied; remove it from the workspace", src, rel, mode.Type())
		}
		return nil
	})
	if err != nil {
		return false, err
	}
	for i := len(dirs) - 1; i >= 0; i-- {
		if err := os.Chmod(dirs[i].path, dirs[i].mode); err != nil {
			return false, fmt.Errorf("copying the workspace: %w", err)
		}
	}
	return files > 0 && cloned == files, nil
}

// copyFile copies one regular file (a reflink where it can; reflinked says
// so), refusing to follow a symlink that replaced it after it was listed.
func copyFile(src, dst string, listed fs.FileInfo) (reflinked bool, err error) {
	in, err := os.OpenFile(src, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return false, fmt.Errorf("reading %s: %w; make it readable or remove it from the workspace", src, err)
	}
	defer in.Close()
	if fi, err := in.Stat(); err != nil || !os.SameFile(fi, listed) {
		return false, fmt.Errorf("%s changed while the workspace was copied; try again", src)
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return false, fmt.Errorf("copying the workspace: %w", err)
	}
	if reflinked, err = cloneOrCopy(out, in); err != nil {
		out.Close()
		return false, fmt.Errorf("copying %s: %w", src, err)
	}
	if err := out.Chmod(listed.Mode().Perm()); err != nil {
		out.Close()
		return false, fmt.Errorf("copying %s: %w", src, err)
	}
	if err := out.Close(); err != nil {
		return false, fmt.Errorf("copying %s: %w", src, err)
	}
	mt := listed.ModTime()
	_ = os.Chtimes(dst, mt, mt)
	return reflinked, nil
}

// RemoveTree removes dir even when the sandbox left read-only directories
// in it, or a killed agentbox left a disk image mounted below it.
func RemoveTree(dir string) error {
	unmountBelow(dir)
	if err := os.RemoveAll(dir); err == nil {
		return nil
	}
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(p, 0o700)
		}
		return nil
	})
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("removing the workspace copy %s: %w; remove it by hand", dir, err)
	}
	return nil
}
