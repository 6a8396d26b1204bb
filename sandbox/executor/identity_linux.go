package executor

import (
	"errors"
	"os"
	"slices"
	"strconv"
	"strings"
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
	byPath map[string]*sandbox.ManifestProgram
	bySize map[int64][]*sandbox.ManifestProgram
	// rootDev is the device of the image's root when that filesystem is
	// read-only (gVisor does not say so in statfs; access(2) does), else 0.
	rootDev uint64

	mu    sync.Mutex
	sums  map[*sandbox.ManifestProgram]string // image files hashed so far ("" unreadable)
	cache map[fileKey]identity
}

// identity is what the manifest says about one executed file.
type identity struct {
	names []string // the names its content has in the image
	known bool     // it is one of the image's executables
	// toolchain and driver: the toolchain the image's file belongs to
	// (sandbox.ManifestProgram.Toolchain) and whether it is its driver.
	toolchain string
	driver    bool
}

// fileKey identifies a file's content on a read-only filesystem.
type fileKey struct {
	dev, ino     uint64
	size         int64
	mtime, ctime syscall.Timespec
}

// maxIdentityCache bounds the identities remembered.
const maxIdentityCache = 4096

func newIdentities(m *sandbox.Manifest, root string) *identities {
	ids := &identities{byPath: map[string]*sandbox.ManifestProgram{}, bySize: map[int64][]*sandbox.ManifestProgram{},
		sums: map[*sandbox.ManifestProgram]string{}, cache: map[fileKey]identity{}}
	var st syscall.Stat_t
	if root != "" && syscall.Stat(root, &st) == nil && readOnlyMount(root) {
		ids.rootDev = uint64(st.Dev)
	}
	for i := range m.Programs {
		e := &m.Programs[i]
		if len(e.Paths) == 0 {
			continue
		}
		ids.byPath[e.Paths[0]] = e
		ids.bySize[e.Size] = append(ids.bySize[e.Size], e)
		if e.SHA256 != "" {
			ids.sums[e] = e.SHA256
		}
	}
	return ids
}

// identify says what the file pid has just executed is. exe is its path
// (readlink /proc/PID/exe).
//
// The image's own file, where the manifest found it on a read-only
// filesystem, is known without reading it, and remembered by device,
// inode, size and times: a program of the image costs a stat per exec. Any
// other file (the workspace, /tmp: writable, so looked at every time, as
// it could change between two execs; while it runs the kernel refuses to
// write it) is compared by sha256 with the image's executables of the same
// size, each of those hashed once; a size no image executable has needs no
// hashing at all.
func (ids *identities) identify(pid int, exe string) identity {
	proc := "/proc/" + strconv.Itoa(pid) + "/exe"
	var st syscall.Stat_t
	if syscall.Stat(proc, &st) != nil {
		return identity{}
	}
	var fs unix.Statfs_t
	readOnly := ids.rootDev != 0 && uint64(st.Dev) == ids.rootDev ||
		unix.Statfs(proc, &fs) == nil && fs.Flags&unix.ST_RDONLY != 0
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
		id = identity{names: programNames(e), known: true, toolchain: e.Toolchain, driver: e.Driver}
	} else if cands := ids.bySize[st.Size]; len(cands) > 0 && st.Size <= maxHashedSize {
		if sum, err := hashFile(proc); err == nil {
			for _, e := range cands {
				if ids.sum(e) == sum {
					if !id.known {
						id.toolchain, id.driver = e.Toolchain, e.Driver
					}
					id.known = true
					id.names = appendNew(id.names, programNames(e)...)
				}
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

// sum is the sha256 of an image file, hashed on first need.
func (ids *identities) sum(e *sandbox.ManifestProgram) string {
	ids.mu.Lock()
	s, ok := ids.sums[e]
	ids.mu.Unlock()
	if ok {
		return s
	}
	s, err := hashFile(e.Paths[0])
	if err != nil {
		s = ""
	}
	ids.mu.Lock()
	ids.sums[e] = s
	ids.mu.Unlock()
	return s
}

func appendNew(names []string, more ...string) []string {
	for _, n := range more {
		found := false
		for _, m := range names {
			found = found || m == n
		}
		if !found {
			names = append(names, n)
		}
	}
	return names
}

// readOnlyMount reports whether root is on a read-only mount: for "/", the
// options of its last mount in /proc/self/mountinfo (gVisor's statfs does
// not report it, and access(2) answers EACCES before EROFS for a user who
// could not write there anyway); elsewhere access(2).
func readOnlyMount(root string) bool {
	if root != "/" {
		return errors.Is(unix.Faccessat(unix.AT_FDCWD, root, unix.W_OK, 0), unix.EROFS)
	}
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return false
	}
	ro := false
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) >= 6 && f[4] == "/" {
			ro = slices.Contains(strings.Split(f[5], ","), "ro")
		}
	}
	return ro
}
