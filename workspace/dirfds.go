package workspace

import (
	"io/fs"
	"path"
	"sync"

	"github.com/agentbox/agentbox/internal/fstree"
	"golang.org/x/sys/unix"
)

// dirFds opens each directory below a Root once (an O_PATH descriptor,
// resolved as the Root resolves: no link followed, not even one that
// stays inside) and keeps it for one listing: every entry of the
// directory is then reached with one *at call on that descriptor instead
// of a path resolved again from the root for each operation. A directory
// that cannot be opened is remembered with its error. Safe for
// concurrent use; close releases the descriptors.
type dirFds struct {
	root *fstree.Root
	mu   sync.Mutex
	fds  map[string]dirFd
}

type dirFd struct {
	fd  int
	err error
}

func newDirFds(root *fstree.Root) *dirFds {
	return &dirFds{root: root, fds: map[string]dirFd{}}
}

// dir is the descriptor of the directory rel ("." = the root).
func (d *dirFds) dir(rel string) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if e, ok := d.fds[rel]; ok {
		return e.fd, e.err
	}
	fd, err := d.root.OpenDir(rel)
	d.fds[rel] = dirFd{fd: fd, err: err}
	return fd, err
}

// parent is the descriptor of the directory holding rel, and rel's last
// component.
func (d *dirFds) parent(rel string) (int, string, error) {
	fd, err := d.dir(path.Dir(rel))
	return fd, path.Base(rel), err
}

// stat is fstree.Root.Stat through the cached parent.
func (d *dirFds) stat(rel string) (fstree.Stamp, error) {
	fd, name, err := d.parent(rel)
	if err != nil {
		return fstree.Stamp{}, err
	}
	st, err := fstree.Lstat(fd, name)
	if err != nil {
		return st, &fs.PathError{Op: "lstat", Path: rel, Err: err}
	}
	return st, nil
}

func (d *dirFds) close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, e := range d.fds {
		if e.err == nil {
			unix.Close(e.fd)
		}
	}
	d.fds = map[string]dirFd{}
}
