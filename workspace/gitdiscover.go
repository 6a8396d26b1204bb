package workspace

import (
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"strings"

	"github.com/agentbox/agentbox/internal/fstree"
	"golang.org/x/sys/unix"
)

// Git's repository discovery (setup.c), and how promotion stays more
// conservative than it on the view the host will have:
//
//   - git opens a directory as a repository when it has a HEAD that
//     validate_headref accepts (a symlink whose text starts "refs/", or a
//     file starting "ref: refs/" or an object id), and objects and refs
//     that access(X_OK) accepts (links followed, any file type) in it or in
//     the directory its commondir file names. It looks for .git (a
//     directory, or a file "gitdir: PATH") in the working directory and
//     each parent, and takes each of them as a bare repository too
//     (safe.bareRepository=all, the default).
//   - The view is the upper layer and the workspace together (a whiteout
//     hides nothing: a held deletion leaves the workspace's entry), names
//     compared folded (foldName), so that a case-insensitive host sees no
//     more than we do.
//   - A directory is a candidate when it has a HEAD git could accept (any
//     symlink counts), or a HEAD of any type with objects, refs or
//     commondir of any type, or objects and refs with config or hooks (a
//     common directory some worktree may name), or a git name of it was
//     held earlier in the session. Every change to one of git's names in a
//     candidate is held, in whatever order the calls write them: a
//     repository is never completed on the host.
//   - In the workspace's own .git, objects, refs, logs and the index are
//     promoted (git add and git commit work in the sandbox; pathHazard
//     holds the rest) and HEAD must stay a ref or an object id; a
//     directory below it is a candidate only as git itself decides (HEAD
//     with commondir, or with objects and refs), so that logs/HEAD and
//     refs/remotes/*/HEAD are promoted.
//   - Any regular file starting "gitdir:" is held wherever it is (git
//     follows one named .git, or named by --git-dir, worktrees, modules).
//
// Assumed: the user's shell sets none of GIT_DIR, GIT_COMMON_DIR or
// GIT_OBJECT_DIRECTORY (they replace discovery altogether).

// gitDirNames are the names git reads in a git directory (folded).
var gitDirNames = foldSet("HEAD", "config", "objects", "refs", "commondir", "hooks", "info", "packed-refs",
	"worktrees", "modules", "gitdir", "index", "config.worktree", "logs", "shallow", "reftable", "branches", "remotes")

func foldSet(names ...string) map[string]bool {
	m := map[string]bool{}
	for _, n := range names {
		m[foldName(n)] = true
	}
	return m
}

// gitView decides, for the lister, which directories of the view are
// repository candidates (cached per directory for one listing).
type gitView struct {
	upper, lower string
	ownGit       bool
	// sticky are the directories a git name was held in this session
	// (the stage's records): they stay candidates.
	sticky map[string]bool
	seen   map[string]gitCandidate
}

type gitCandidate struct {
	yes bool
	why string
	// undecided: its entries could not be read; a candidate all the same.
	undecided bool
}

// dirGit is what one layer's directory holds of git's names.
type dirGit struct {
	head, headValid, objects, refs, commondir, conf bool
}

func (a *dirGit) or(b dirGit) {
	a.head, a.headValid, a.objects = a.head || b.head, a.headValid || b.headValid, a.objects || b.objects
	a.refs, a.commondir, a.conf = a.refs || b.refs, a.commondir || b.commondir, a.conf || b.conf
}

// leafHazard is the catalogue's hazard of a file or link at c.Path where
// an entry (or its directory) goes: by its path and type alone.
func (l *lister) leafHazard(c *StagedChange) (string, string) {
	ownTop := l.gitView.ownGit && strings.HasPrefix(c.Path+"/", ".git/")
	if c.Change != "deleted" && c.Type != TypeDir {
		if e := HostRun.Match(c.Path, true, ownTop); e != nil {
			return e.rule(), e.Tool + " (" + e.Family + "): " + e.Why + " (a file or link where its directory goes)"
		}
	}
	return "", ""
}

// gitHazard is the host hazard of a change that its type, its content or
// its directory's content make ("" when none): a link or file where a
// catalogue entry's directory goes, a gitdir: file, the own repository's
// HEAD, or one of git's names in a repository candidate.
func (l *lister) gitHazard(c *StagedChange) (string, string) {
	v := l.gitView
	segs := strings.Split(c.Path, "/")
	ownTop := v.ownGit && segs[0] == ".git"
	// A file that replaces a directory is judged here even in rw
	// promotion: held, it holds the directory's entries, whose deletions
	// run before any copy.
	if c.Change != "deleted" && c.Type == TypeFile && (!l.gitdirAtCopy || c.lowIn && c.low.IsDir()) {
		gd, err := l.gitdirUpper(c.Path)
		if err != nil {
			// Gone or changed since it was listed (a process the sandbox
			// kept), or unreadable: undecided, so held.
			return HazardNotStaged, "could not be read to decide whether it is a gitdir: link (" + err.Error() + "); undecided changes are held"
		}
		if gd {
			return HazardGitRepo, "a gitdir: link to a git repository"
		}
	}
	if ownTop && c.Path == ".git/HEAD" {
		if c.Change == "deleted" || c.Type != TypeFile {
			return HazardGitOwn, "the workspace's .git/HEAD must stay a file holding a ref or an object id"
		}
		ok, err := readHead(v.upper, c.Path, true)
		if err != nil || !ok {
			return HazardGitOwn, "the workspace's .git/HEAD must hold a ref (ref: refs/...) or an object id"
		}
	}
	for i := len(segs) - 1; i >= 0; i-- {
		if !gitDirNames[foldName(segs[i])] {
			continue
		}
		d := "."
		if i > 0 {
			d = strings.Join(segs[:i], "/")
		}
		if v.ownGit && d == ".git" {
			continue
		}
		// A change kept for apply before the directory became sticky is
		// decided again as it was (rw promotion would have promoted it).
		_, kept := l.s.st.Kept[c.Path]
		if v.sticky[d] && !(l.all && kept) {
			return HazardGitRepo, d + " would be a git repository (a git name in it was held earlier in this session)"
		}
		if k := v.candidate(d); k.yes {
			v.sticky[d] = true
			if k.undecided {
				return HazardNotStaged, "could not decide whether " + d + " would be a git repository (" + k.why + "); undecided changes are held"
			}
			return HazardGitRepo, d + " would be a git repository (" + k.why + ")"
		}
	}
	return "", ""
}

// candidate decides whether the directory d of the view is a repository
// candidate (see above). What cannot be read is a candidate: held, with
// the reason.
func (v *gitView) candidate(d string) gitCandidate {
	if k, ok := v.seen[d]; ok {
		return k
	}
	k := v.decide(d)
	v.seen[d] = k
	return k
}

func (v *gitView) decide(d string) gitCandidate {
	var g dirGit
	for _, root := range []string{v.upper, v.lower} {
		lg, err := scanGitNames(root, d)
		if err != nil {
			return gitCandidate{yes: true, undecided: true, why: "its entries could not be read: " + err.Error()}
		}
		g.or(lg)
	}
	inOwn := v.ownGit && strings.HasPrefix(d, ".git/")
	switch {
	case !inOwn && g.headValid:
		return gitCandidate{yes: true, why: "a HEAD git accepts"}
	case !inOwn && g.head && (g.objects || g.refs || g.commondir):
		return gitCandidate{yes: true, why: "HEAD with objects, refs or commondir"}
	case inOwn && g.headValid && (g.commondir || g.objects && g.refs):
		return gitCandidate{yes: true, why: "HEAD with objects and refs, or commondir"}
	case g.objects && g.refs && g.conf:
		return gitCandidate{yes: true, why: "objects and refs with config or hooks: a common directory"}
	}
	return gitCandidate{}
}

// scanGitNames reads the directory d below root (every element a real
// directory) for git's names, folded, of any type; a whiteout is no entry.
// A directory that is not there holds nothing.
func scanGitNames(root, d string) (dirGit, error) {
	var g dirGit
	fd, err := openBeneath(root, d, unix.O_RDONLY|unix.O_DIRECTORY)
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP) {
		return g, nil // absent, or a link: nothing of this layer is there
	}
	if err != nil {
		return g, err
	}
	defer unix.Close(fd)
	names, err := fstree.ReadNames(fd)
	if err != nil {
		return g, err
	}
	for _, n := range names {
		f := foldName(n)
		switch f {
		case "head", "objects", "refs", "commondir", "config", "config.worktree", "hooks":
		default:
			continue
		}
		st, err := fstree.Lstat(fd, n)
		if errors.Is(err, unix.ENOENT) {
			continue
		}
		if err != nil {
			return g, err
		}
		if st.Whiteout() {
			continue
		}
		switch f {
		case "head":
			g.head = true
			switch {
			case st.IsSymlink():
				g.headValid = true // git takes "refs/..." links; any link here
			case st.IsRegular():
				ok, err := readHeadAt(fd, n, false)
				if err != nil {
					return g, err
				}
				g.headValid = g.headValid || ok
			}
		case "objects":
			g.objects = true
		case "refs":
			g.refs = true
		case "commondir":
			g.commondir = true
		default:
			g.conf = true
		}
	}
	return g, nil
}

// readHead reads the file rel below root as a HEAD (readHeadAt).
func readHead(root, rel string, strict bool) (bool, error) {
	fd, err := openBeneath(root, path.Dir(rel), unix.O_RDONLY|unix.O_DIRECTORY)
	if err != nil {
		return false, err
	}
	defer unix.Close(fd)
	return readHeadAt(fd, path.Base(rel), strict)
}

// readHeadAt reports whether the regular file name in dirfd is a HEAD
// git's validate_headref accepts: "ref:" then "refs/...", or an object
// id (40 or 64 hex digits). Not strict (a HEAD outside the workspace's
// own .git), more is taken than git takes: leading white space, "ref:"
// in any case and to any name, 40 hex digits of either case.
func readHeadAt(dirfd int, name string, strict bool) (bool, error) {
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return false, err
	}
	defer unix.Close(fd)
	buf := make([]byte, headPrefix)
	n, err := unix.Read(fd, buf)
	if err != nil {
		return false, err
	}
	return headBytes(buf[:max(n, 0)], strict), nil
}

// headPrefix is how much of a file readHeadAt reads (git reads no more
// of a HEAD to validate it).
const headPrefix = 255

// headBytes is readHeadAt's verdict on a file's first headPrefix bytes.
func headBytes(b []byte, strict bool) bool {
	s := string(b)
	if !strict {
		s = strings.TrimLeft(s, " \t\r\n\v\f")
		if len(s) >= 4 && strings.EqualFold(s[:4], "ref:") {
			return true
		}
		return hexRun(s) >= 40
	}
	if r, ok := strings.CutPrefix(s, "ref:"); ok {
		return strings.HasPrefix(strings.TrimLeft(r, " \t\r\n\v\f"), "refs/")
	}
	h := hexRun(s)
	return h == 40 && (len(s) == 40 || s[40] == '\n') || h == 64 && (len(s) == 64 || s[64] == '\n')
}

func hexRun(s string) int {
	for i := 0; i < len(s); i++ {
		c := s[i] | 0x20
		if !('0' <= s[i] && s[i] <= '9' || 'a' <= c && c <= 'f') {
			return i
		}
	}
	return len(s)
}

// gitdirUpper reports a regular file of the staging layer that starts
// with "gitdir:" (a .git file's link to a repository), after white space
// and in any case, read through the lister's descriptor of rel's
// directory.
func (l *lister) gitdirUpper(rel string) (bool, error) {
	dfd, name, err := l.upd.parent(rel)
	if err != nil {
		return false, err
	}
	return gitdirAt(dfd, name)
}

// gitdirAt is gitdirUpper on the entry name of the directory dfd.
func gitdirAt(dfd int, name string) (bool, error) {
	fd, err := unix.Openat(dfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return false, err
	}
	defer unix.Close(fd)
	b := make([]byte, gitdirPrefix)
	n, err := unix.Read(fd, b)
	if err != nil {
		return false, err
	}
	return gitdirBytes(b[:max(n, 0)]), nil
}

// gitdirPrefix is how much of a file gitdirAt reads.
const gitdirPrefix = 64

// gitdirBytes is gitdirAt's verdict on a file's first gitdirPrefix bytes.
func gitdirBytes(b []byte) bool {
	s := strings.TrimLeft(string(b), " \t\r\n\v\f\ufeff")
	return len(s) >= 7 && strings.EqualFold(s[:7], "gitdir:")
}

// openBeneath opens rel below root with flags, every element of the way a
// real directory and the last one no link (never following a link the
// sandbox may have put there).
func openBeneath(root, rel string, flags int) (int, error) {
	fd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("opening %s: %w", root, err)
	}
	if rel == "." || rel == "" {
		return fd, nil
	}
	segs := strings.Split(filepath.ToSlash(rel), "/")
	for i, s := range segs {
		fl := unix.O_RDONLY | unix.O_DIRECTORY
		if i == len(segs)-1 {
			fl = flags
		}
		nfd, err := unix.Openat(fd, s, fl|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		unix.Close(fd)
		if err != nil {
			return -1, err
		}
		fd = nfd
	}
	return fd, nil
}
