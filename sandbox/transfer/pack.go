package transfer

import (
	"archive/tar"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"
)

// Stats counts what a pack wrote, and what it left out.
type Stats struct {
	Entries int
	Bytes   int64 // content of regular files
	Skipped int   // special files (sockets, devices, FIFOs), never carried
	Denied  int   // paths the skip matcher left out
}

// PackTree writes the tree below dir as a tar stream: directories, regular
// files and symbolic links (as links, never followed), with their
// permission bits. Paths skip names are left out (a directory with its
// tree); special files are left out too. More than max bytes of content
// (0: no bound) fail with ErrTooLarge.
func PackTree(w io.Writer, dir string, skip Matcher, max int64) (Stats, error) {
	var st Stats
	root, err := os.OpenRoot(dir)
	if err != nil {
		return st, fmt.Errorf("reading the workspace: %w", err)
	}
	defer root.Close()
	tw := tar.NewWriter(w)
	err = fs.WalkDir(root.FS(), ".", func(rel string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("reading %s: %w; make it readable or remove it from the workspace", rel, err)
		}
		if rel == "." {
			return nil
		}
		if skip != nil && skip(rel) != "" {
			st.Denied++
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return fmt.Errorf("reading %s: %w", rel, err)
		}
		hdr := &tar.Header{Name: rel, Mode: int64(info.Mode().Perm()), ModTime: info.ModTime().Truncate(time.Microsecond)}
		switch mode := info.Mode(); {
		case mode.IsDir():
			hdr.Typeflag = tar.TypeDir
		case mode&fs.ModeSymlink != 0:
			link, err := root.Readlink(rel)
			if err != nil {
				return fmt.Errorf("reading symlink %s: %w", rel, err)
			}
			hdr.Typeflag, hdr.Linkname = tar.TypeSymlink, link
		case mode.IsRegular():
			return packFile(tw, root, rel, hdr, &st, max)
		default:
			st.Skipped++
			return nil
		}
		st.Entries++
		return tw.WriteHeader(hdr)
	})
	if err != nil {
		return st, err
	}
	return st, tw.Close()
}

// packFile writes one regular file, as large as it is when opened.
func packFile(tw *tar.Writer, root *os.Root, rel string, hdr *tar.Header, st *Stats, max int64) error {
	f, err := root.Open(rel)
	if err != nil {
		return fmt.Errorf("reading %s: %w; make it readable or remove it from the workspace", rel, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return fmt.Errorf("%s changed while the workspace was sent; try again", rel)
	}
	st.Bytes += fi.Size()
	if max > 0 && st.Bytes > max {
		return fmt.Errorf("%w: more than %d MiB of files", ErrTooLarge, max>>20)
	}
	hdr.Typeflag, hdr.Size = tar.TypeReg, fi.Size()
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	st.Entries++
	return copyExactly(tw, f, fi.Size())
}

// copyExactly copies n bytes, padding with zeros when the file shrank
// meanwhile (a tar entry must carry exactly its size).
func copyExactly(w io.Writer, r io.Reader, n int64) error {
	c, err := io.CopyN(w, r, n)
	if err == io.EOF {
		_, err = io.CopyN(w, zeros{}, n-c)
	}
	return err
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }
