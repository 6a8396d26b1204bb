package workspace

import (
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// cloneOrCopy fills out with in's bytes: a reflink (FICLONE, shared blocks,
// constant cost) where the filesystem can, else a plain copy. It reports
// whether the reflink worked.
func cloneOrCopy(out, in *os.File) (bool, error) {
	if err := unix.IoctlFileClone(int(out.Fd()), int(in.Fd())); err == nil {
		return true, nil
	}
	_, err := io.Copy(out, in)
	return false, err
}
