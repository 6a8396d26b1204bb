package executor

import (
	"strconv"
	"sync"
	"syscall"

	"github.com/agentbox/agentbox/sandbox"
	"golang.org/x/sys/unix"
)

// identities knows the programs a command executes by content: the file
// actually executed (/proc/PID/exe: after symbolic links; for a #! script,
// its interpreter) against the image's manifest of executables. A copy or
// link of python3 under any name has python3's names; a file that is not
// one of the image's executables is unknown.
type identities struct {
	bySHA  map[string]*sandbox.ManifestProgram
	byPath map[string]*sandbox.ManifestProgram

	mu    sync.Mutex
	cache map[fileKey]identity
}

// identity is what the manifest says about one executed file.
type identity struct {
	names []string // the names its content has in the image
	known bool     // it is one of the image's executables
}

// fileKey identifies a file's content on a read-only filesystem.
type fileKey struct {
	dev, ino     uint64
	size         int64
	mtime, ctime syscall.Timespec
}

// maxIdentityCache bounds the identities remembered.
const maxIdentityCache = 4096

func newIdentities(m *sandbox.Manifest) *identities {
	ids := &identities{bySHA: map[string]*sandbox.ManifestProgram{}, byPath: map[string]*sandbox.ManifestProgram{},
		cache: map[fileKey]identity{}}
	for i := range m.Programs {
		e := &m.Programs[i]
		if _, dup := ids.bySHA[e.SHA256]; !dup {
			ids.bySHA[e.SHA256] = e
		} else {
			// The same content at several paths: every name counts.
			ids.bySHA[e.SHA256] = &sandbox.ManifestProgram{SHA256: e.SHA256, Size: e.Size,
				Paths: append(append([]string(nil), ids.bySHA[e.SHA256].Paths...), e.Paths...)}
		}
		if len(e.Paths) > 0 {
			ids.byPath[e.Paths[0]] = e
		}
	}
	return ids
}

// identify says what the file pid has just executed is. exe is its path
// (readlink /proc/PID/exe). Files on a read-only filesystem (the image's
// root) are remembered by device, inode, size and times, so a program of
// the image costs one stat after its first exec; a file on a writable one
// (the workspace, /tmp) is hashed at every exec: it could change between
// two (while it runs it cannot: the kernel refuses to write it).
func (ids *identities) identify(pid int, exe string) identity {
	proc := "/proc/" + strconv.Itoa(pid) + "/exe"
	var st syscall.Stat_t
	if syscall.Stat(proc, &st) != nil {
		return identity{}
	}
	var fs unix.Statfs_t
	readOnly := unix.Statfs(proc, &fs) == nil && fs.Flags&unix.ST_RDONLY != 0
	key := fileKey{dev: uint64(st.Dev), ino: st.Ino, size: st.Size, mtime: st.Mtim, ctime: st.Ctim}
	if readOnly {
		ids.mu.Lock()
		id, ok := ids.cache[key]
		ids.mu.Unlock()
		if ok {
			return id
		}
	}
	var id identity
	if e := ids.byPath[exe]; e != nil && readOnly && e.Size == st.Size {
		// The image's own file, where the manifest found it, on a
		// filesystem nothing can change.
		id = identity{names: programNames(e), known: true}
	} else if st.Size <= maxHashedSize {
		if sum, err := hashFile(proc); err == nil {
			if e := ids.bySHA[sum]; e != nil {
				id = identity{names: programNames(e), known: true}
			}
		}
	}
	if readOnly {
		ids.mu.Lock()
		if len(ids.cache) >= maxIdentityCache {
			clear(ids.cache)
		}
		ids.cache[key] = id
		ids.mu.Unlock()
	}
	return id
}
