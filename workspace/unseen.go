package workspace

import (
	"path"

	"github.com/agentbox/agentbox/internal/fstree"
)

// madeAbove is the nearest directory at or above rel that promotion made
// this session and marked opaque, and that is still that directory (its
// identity as recorded), "" when none. The sandbox sees only its own
// entries below such a directory: a workspace entry there that promotion
// did not put is the user's (made, or moved in with old times, on the
// host), one the sandbox never saw and so cannot have deleted.
func (l *lister) madeAbove(rel string) string {
	for d := rel; d != "." && d != "/" && d != ""; d = path.Dir(d) {
		if pr, ok := l.s.st.Promoted[d]; ok && pr.Made && l.stillMade(d, pr.Lower) {
			return d
		}
	}
	return ""
}

// stillMade reports whether the workspace directory d is the one
// promotion recorded (memoized for the listing).
func (l *lister) stillMade(d string, rec fstree.Stamp) bool {
	l.madeMu.Lock()
	ok, seen := l.made[d]
	l.madeMu.Unlock()
	if seen {
		return ok
	}
	cur, err := l.lowd.stat(d)
	ok = err == nil && cur.IsDir() && cur.Ino == rec.Ino && cur.Dev == rec.Dev
	l.madeMu.Lock()
	l.made[d] = ok
	l.madeMu.Unlock()
	return ok
}

// unseenWhy is why an unseen entry's deletion is held.
func unseenWhy(made string) string {
	return "added in the workspace during the session, inside " + made +
		", a directory the sandbox made and sees only its own entries of: the sandbox never saw it, so it is not its to delete"
}
