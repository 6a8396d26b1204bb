package workspace

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/agentbox/agentbox/internal/fstree"
	"golang.org/x/sys/unix"
)

// markOpaque marks the upper directory rel, just promoted into the
// workspace where it had no directory (new in the sandbox's view, or in
// place of a file), as overlay-opaque; marked, the directory is sealed
// (unseen.go).
//
// The overlay looked rel up when it had no lower directory, and keeps
// that: the sandbox's deletions and renames inside it leave no whiteout,
// as nothing below needs hiding. Once promotion gives the workspace the
// same directory, those deletions would be invisible to the host (never
// promoted) and the deleted entries would come back in the sandbox's view
// when the kernel drops its cached lookup. Opaque, the directory means
// the same to a cached and a fresh lookup (the upper directory alone),
// and the host lists the workspace entries it lacks as deleted.
//
// The mark is overlay's own (user.overlay.opaque, read with userxattr);
// it is set through a descriptor of the upper directory, never through a
// path the sandbox could redirect. A mark that cannot be set leaves the
// old behaviour. up is the upper directory.
//
// It returns the directory's stamp after the mark when nothing but the
// mark changed it since listed (its ctime moved with the xattr): recorded,
// that stamp does not send the next listing through opaqueDeletions for
// a change that is the host's own.
//
// marked says the mark is set.
func markOpaque(up *fstree.Root, rel string, listed fstree.Stamp) (after fstree.Stamp, same, marked bool) {
	fd, err := up.ReadDirFd(rel)
	if err != nil {
		return after, false, false
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil {
		return after, false, false
	}
	same = fstree.StampOf(&st) == listed
	marked = unix.Fsetxattr(fd, "user.overlay.opaque", []byte("y"), 0) == nil
	if !marked || !same {
		return after, false, marked
	}
	if unix.Fstat(fd, &st) != nil {
		return after, false, marked
	}
	after = fstree.StampOf(&st)
	return after, after.Ino == listed.Ino && after.MTime == listed.MTime, marked
}

// opaqueDeletions lists, for a promoted opaque directory whose entries
// changed since, the entries it had in the workspace and no longer has as
// deleted (a deleted directory's entries follow in expandDeletions). Cost: one
// directory of the workspace; deeper directories are compared when
// their own entries change.
func (l *lister) opaqueDeletions(e *fstree.Entry) error {
	fd, err := l.low.ReadDirFd(e.Rel)
	if err != nil {
		return fmt.Errorf("reading the workspace at %s: %w", e.Rel, err)
	}
	defer unix.Close(fd)
	names, err := fstree.ReadNames(fd)
	if err != nil {
		return fmt.Errorf("reading the workspace at %s: %w", e.Rel, err)
	}
	// The workspace directory's ctime when it was promoted: anything
	// below it not changed since is older. Only while it is still that
	// directory: one the user put in its place (mv) holds entries the
	// sandbox never saw, however old.
	pr := l.s.st.Promoted[e.Rel].Lower
	var since int64
	var dst unix.Stat_t
	if unix.Fstat(fd, &dst) == nil && dst.Ino == pr.Ino && uint64(dst.Dev) == pr.Dev {
		since = pr.CTime
	}
	var out []StagedChange
	for _, name := range names {
		_, err := l.up.Stat(e.Rel + "/" + name)
		if err == nil {
			continue // in the upper directory: the walk lists it
		}
		// Gone, or its directory replaced since the walk (a kept process):
		// not in the upper directory now; the directory is decided (and
		// held, when it cannot be read) before what is below it.
		if !noEntry(err) {
			return fmt.Errorf("reading the staged changes at %s/%s: %w", e.Rel, name, err)
		}
		low, err := fstree.Lstat(fd, name)
		if err != nil {
			continue
		}
		// Only an entry the sandbox had can be its deletion: one
		// promotion put there, as it put it, or one the workspace had
		// before the directory was promoted (kept as it was: the sandbox
		// made the same). An entry the user made or changed on the host
		// since is one the sandbox never saw (the directory is opaque to
		// it), and stays.
		rel := e.Rel + "/" + name
		if l.heldOut(rel) != "" {
			continue // held out of the sandbox's view: not its deletion
		}
		if pr, ok := l.s.st.Promoted[rel]; ok {
			if fstree.Changed(pr.Lower, low) {
				continue
			}
		} else if l.unseen(rel, low.IsDir()) != "" {
			// The user's, never seen by the sandbox (and nothing of the
			// sandbox's is ever promoted into it): it stays.
			continue
		} else if low.IsDir() {
			// A directory's ctime moves whenever promotion writes into
			// it; its birth does not.
			if bornAfter(fd, name, since) {
				continue
			}
		} else if low.CTime > since {
			continue
		}
		out = append(out, StagedChange{Path: rel, Change: "deleted", Type: typeOf(low), Bytes: low.Size, gone: low.IsDir()})
	}
	l.add(out...)
	l.mu.Lock()
	l.s.dirs[e.Rel] = e.Stamp
	l.mu.Unlock()
	return nil
}

// bornAfter reports whether the entry name in dirfd was made after t (a
// filesystem timestamp in ns): its birth time, where the filesystem keeps
// one; without, false (taken for the sandbox's, as before birth times).
func bornAfter(dirfd int, name string, t int64) bool {
	var stx unix.Statx_t
	if unix.Statx(dirfd, name, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_BTIME, &stx) != nil || stx.Mask&unix.STATX_BTIME == 0 {
		return false
	}
	return stx.Btime.Sec*1e9+int64(stx.Btime.Nsec) > t
}

// noEntry says err means there is no entry at the path now: gone
// (ENOENT), or a non-directory (ENOTDIR) or a link (never followed) in
// its place above it. The listing and its decisions meet these when a
// process the sandbox kept changes the tree as it is read.
func noEntry(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, fstree.ErrLinkInPath)
}
