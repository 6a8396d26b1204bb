package workspace

import (
	"path"
	"strings"

	"github.com/agentbox/agentbox/internal/fstree"
)

// A sealed directory is one the sandbox sees only the upper directory of:
// promotion made it (and marked it opaque), or it is opaque in the upper
// directory (recreated: rm -rf D && mkdir D, a file replaced by a
// directory), or it lay below one being sealed and was only copied up
// (hidden: node_modules/foo below a recreated node_modules). Every
// workspace directory the sandbox can see below a sealed one is recorded
// (promoted or hidden); a workspace directory there that is not is the
// user's (made, or moved in with old times, on the host): the sandbox
// never saw it or anything below it, so none of it is the sandbox's to
// delete or overwrite. (Files the user adds directly are newer than the
// session: the conflict check holds them by their ctime.)

// unseen says why rel is the user's by that rule ("" when it is not):
// rel (a workspace directory: isDir) or a workspace directory between it
// and the nearest sealed one above it is not recorded. (A directory the
// workspace does not have is one this call adds.)
func (l *lister) unseen(rel string, isDir bool) string {
	d := rel
	if !isDir {
		d = path.Dir(rel)
	}
	user := ""
	for ; d != "." && d != "/" && d != ""; d = path.Dir(d) {
		pr, ok := l.s.st.Promoted[d]
		if !ok {
			if l.lowDir(d) {
				user = d // the outermost so far
			}
			continue
		}
		if pr.Sealed && l.stillSealed(d, pr.Lower) {
			if user != "" {
				return user + " was added in the workspace during the session inside " + d +
					", where the sandbox sees only its own entries: the sandbox never saw it, so nothing of the sandbox's changes it or goes into it"
			}
			return ""
		}
	}
	return ""
}

// stillSealed reports whether the workspace directory d is the one
// promotion recorded (memoized for the listing): one the user put in its
// place is theirs, and the conflict check holds it.
func (l *lister) stillSealed(d string, rec fstree.Stamp) bool {
	return l.memo(l.sealedOK, d, func(cur fstree.Stamp) bool { return cur.Ino == rec.Ino && cur.Dev == rec.Dev })
}

// memo answers whether the workspace has a directory at d for which ok
// holds, once per listing (m is the answers so far).
func (l *lister) memo(m map[string]bool, d string, ok func(fstree.Stamp) bool) bool {
	l.memoMu.Lock()
	v, seen := m[d]
	l.memoMu.Unlock()
	if seen {
		return v
	}
	cur, err := l.lowd.stat(d)
	v = err == nil && cur.IsDir() && ok(cur)
	l.memoMu.Lock()
	m[d] = v
	l.memoMu.Unlock()
	return v
}

// lowDir reports whether the workspace has a directory at d (memoized
// for the listing).
func (l *lister) lowDir(d string) bool {
	return l.memo(l.lowDirs, d, func(fstree.Stamp) bool { return true })
}

// sealing notes that the upper directory rel seals its workspace
// directory in this listing (recreated), and records rel as hidden when
// it is a directory only copied up below one being sealed: the sandbox
// sees only its upper copy from now on. Both happen while the walk
// visits (parents before their entries).
func (l *lister) sealing(rel string, up, low fstree.Stamp, recreated bool) {
	l.memoMu.Lock()
	parent := l.sealingNow[path.Dir(rel)]
	if recreated {
		l.sealingNow[rel] = true
	}
	l.memoMu.Unlock()
	// A directory of the user's below one sealed before (the sandbox
	// recreated the parent again and made its own at that name) is not
	// the sandbox's to record.
	if recreated || !parent || l.unseen(rel, true) != "" {
		return
	}
	l.memoMu.Lock()
	defer l.memoMu.Unlock()
	l.sealingNow[rel] = true
	l.s.hidden[rel] = promotedEntry{Upper: up, Lower: low, Sealed: true}
}

// recordHidden records the hidden directories of this listing whose
// sealing directory was promoted (none of it or above it held).
func (p *promoter) recordHidden() {
	held := map[string]bool{}
	for _, c := range p.cp.Changes {
		if c.Held != "" {
			held[c.Path] = true
		}
	}
	for rel, pe := range p.s.hidden {
		if pr, ok := p.s.st.Promoted[rel]; ok {
			pe = pr // recorded before (a mode change): sealed from now on
			pe.Sealed = true
		}
		if !held[rel] && !insideMoved(rel, held) {
			p.s.st.Promoted[rel] = pe
		}
	}
}

// holdOut records that the workspace's rel is out of the sandbox's view
// when a sealed directory lies above it (the hold took its upper copy
// away and the opaque directory hides the workspace's).
func (s *Stage) holdOut(rel string) {
	for d := path.Dir(rel); d != "."; d = path.Dir(d) {
		if s.st.Promoted[d].Sealed {
			if s.st.HeldOut == nil {
				s.st.HeldOut = map[string]bool{}
			}
			s.st.HeldOut[rel] = true
			return
		}
	}
}

// heldOut says why rel is out of the sandbox's view by a hold ("" when
// it is not): rel or a directory above it is HeldOut.
func (l *lister) heldOut(rel string) string {
	for d := rel; d != "." && d != "/" && d != ""; d = path.Dir(d) {
		if l.s.st.HeldOut[d] {
			return d + " was held out of the sandbox's view by an earlier call (its workspace version stays): the sandbox does not see it, so it is not its to delete"
		}
	}
	return ""
}

// unseal forgets that rel and the directories below it are sealed: a held
// deletion put the workspace's rel back in the sandbox's view.
func (s *Stage) unseal(rel string) {
	for p, pe := range s.st.Promoted {
		if pe.Sealed && (p == rel || strings.HasPrefix(p, rel+"/")) {
			pe.Sealed = false
			s.st.Promoted[p] = pe
		}
	}
}
