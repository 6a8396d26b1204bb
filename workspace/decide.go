package workspace

import (
	"path"
	"sort"
	"strings"

	"github.com/agentbox/agentbox/internal/fstree"
)

// decideAll decides every listed change, in an order no later decision
// can undo: parents before their entries, every reason a change is held
// (policy, hazard, conflict) decided at once so that a held path holds
// everything below it, then each symlink judged by where it resolves in
// the view the host will have (held changes leave the workspace's entry
// there), again until nothing more is held.
func (l *lister) decideAll() {
	sort.Slice(l.out, func(i, j int) bool { return l.out[i].Path < l.out[j].Path })
	for i := range l.out {
		l.index[l.out[i].Path] = i
	}
	for i := range l.out {
		c := &l.out[i]
		l.decide(c)
		if c.Held == "" && l.conflicts {
			c.Held, c.Why = l.conflict(c)
		}
		if c.Held != "" {
			l.heldDirs[c.Path] = true
		}
	}
	for more := true; more; {
		more = false
		for i := range l.out {
			c := &l.out[i]
			if c.Held != "" || c.Type != TypeSymlink || c.Change == "deleted" {
				continue
			}
			why, through := l.linkResolve(c.Path, c.target)
			if why == "" {
				c.through = through
				continue
			}
			c.Held, c.Why = HazardSymlink, why
			l.heldDirs[c.Path] = true
			more = true
		}
		if more {
			// A held link may have replaced a directory whose entries
			// were listed as deleted: they are held with it.
			for i := range l.out {
				if c := &l.out[i]; c.Held == "" {
					if d := l.heldAbove(c.Path); d != "" {
						c.Held, c.Why = HazardParent, d+" is held"
					}
				}
			}
		}
	}
}

// heldAbove is the nearest held path above rel ("" when none).
func (l *lister) heldAbove(rel string) string {
	for d := path.Dir(rel); d != "."; d = path.Dir(d) {
		if l.heldDirs[d] {
			return d
		}
	}
	return ""
}

// decide fills c.Held: a held parent, the policy, then the host hazards.
func (l *lister) decide(c *StagedChange) {
	if c.unread != "" {
		c.Held, c.Why = HazardNotStaged, c.unread
		return
	}
	if d := l.heldAbove(c.Path); d != "" {
		c.Held, c.Why = HazardParent, d+" is held"
		return
	}
	if rule, why := l.ownGitType(c); rule != "" {
		c.Held, c.Why = rule, why // whatever the policy says
		return
	}
	explicit := false
	if l.s.Decide != nil {
		denied, rule, exp := l.s.Decide(c.Path)
		if denied {
			c.Held, c.Why = rule, "files.write denies it"
			return
		}
		explicit = exp
	}
	// An allow rule naming the path lifts a hazard of the path alone
	// (the catalogue, git's names); what the change is (a link that
	// leaves, a special file, git's content rules) is held whatever the
	// policy names.
	rule, why := l.hazard(c)
	if explicit && rule != "" {
		if nrule, _ := l.namedHazard(c); nrule != "" {
			rule, why = l.typeHazard(c)
		}
	}
	if rule != "" {
		c.Held, c.Why = rule, why
	}
}

// ownGitType holds a symlink, FIFO, socket or device anywhere in the
// workspace's own .git directory: git makes none there, and a link there
// (.git/logs/HEAD, a ref, the index) would make the host's git write
// wherever it points.
func (l *lister) ownGitType(c *StagedChange) (string, string) {
	if !l.ownGit || c.Change == "deleted" || c.Type == TypeFile || c.Type == TypeDir || !strings.HasPrefix(c.Path, ".git/") {
		return "", ""
	}
	if c.Type == TypeSymlink {
		return HazardGitOwn, "a symlink in the workspace's .git directory (the host's git would write through it) is never promoted; git makes none there"
	}
	return HazardGitOwn, "a FIFO, socket or device in the workspace's .git directory is never promoted"
}

// conflict says whether the workspace entry at c.Path changed since the
// sandbox saw it: since staging began, or since agentbox promoted it.
// The entry is read through descriptors: a link on the way is not
// followed (the change then meets it when written, and is held).
func (l *lister) conflict(c *StagedChange) (string, string) {
	// A deletion of what a hold took out of the sandbox's view: not the
	// sandbox's (it does not see it).
	if c.Change == "deleted" {
		if why := l.heldOut(c.Path); why != "" {
			return HazardConflict, why
		}
	}
	// Changed, added or deleted inside a workspace directory of the
	// user's that the sandbox never saw: nothing of the sandbox's goes
	// into it or takes from it.
	isDir := c.Change != "added" && c.Type == TypeDir && (!c.lowSeen || c.lowIn && c.low.IsDir())
	if why := l.unseen(c.Path, isDir); why != "" {
		return HazardConflict, why
	}
	cur, err := c.low, error(nil)
	switch {
	case c.lowSeen && !c.lowIn:
		return "", "" // nothing there when listed
	case !c.lowSeen:
		cur, err = l.lowd.stat(c.Path)
	}
	if err != nil {
		if noEntry(err) {
			return "", ""
		}
		return HazardNotStaged, "the workspace entry could not be read: " + err.Error()
	}
	if pr, ok := l.s.st.Promoted[c.Path]; ok {
		if fstree.Changed(pr.Lower, cur) {
			return HazardConflict, "changed in the workspace since agentbox promoted it"
		}
		return "", ""
	}
	if cur.CTime >= l.s.st.Since && !cur.IsDir() {
		return HazardConflict, "changed in the workspace since the session started"
	}
	return "", ""
}

// contentHazard re-decides, on the copy about to be renamed into place
// (its first bytes, as written to the temporary file in the workspace,
// which only agentbox writes), what the listing decided by a file's
// content: a gitdir: link, and whether a file named HEAD reads as one
// git accepts (which makes its directory a repository). A sandbox that
// rewrites a file between the decision and the copy gets the copy held.
func (p *promoter) contentHazard(c *StagedChange, prefix []byte) (string, string) {
	if gitdirBytes(prefix[:min(len(prefix), gitdirPrefix)]) {
		return HazardGitRepo, "a gitdir: link to a git repository"
	}
	if foldName(path.Base(c.Path)) == foldName("HEAD") {
		for _, strict := range []bool{false, true} {
			if headBytes(prefix[:min(len(prefix), headPrefix)], strict) != c.headValid[boolIndex(strict)] {
				return HazardGitRepo, "a HEAD whose content changed between the decision and the copy"
			}
		}
	}
	return "", ""
}

func boolIndex(b bool) int {
	if b {
		return 1
	}
	return 0
}
