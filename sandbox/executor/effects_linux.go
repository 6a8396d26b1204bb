package executor

import (
	"fmt"
	"os"
	"strings"

	"github.com/agentbox/agentbox/internal/fstree"
	"github.com/agentbox/agentbox/sandbox/wire"
	"golang.org/x/sys/unix"
)

// Bounds of the effects check.
const (
	maxWalk      = 200_000  // entries visited per check
	maxKeptFile  = 1 << 20  // files up to this size are copied at start to be restored
	maxKeptTotal = 16 << 20 // all copies together
)

// effects is the check after every exec: write-denied paths that appeared
// or changed since the session started are undone, new set-id bits are
// cleared and new device nodes removed. What existed at start was the
// host's and is left alone (the kernel-level file rules protect it).
type effects struct {
	root  string
	deny  []string
	lits  [][]string // per deny glob: its literal segments (a cheap filter)
	match Matcher

	base    map[string]snap // write-denied paths at start
	special map[string]snap // set-id files and device nodes at start
	kept    int
}

// snap is what is remembered of one path.
type snap struct {
	fstree.Stamp
	data    []byte // a copy to restore, when small
	hasData bool
}

func snapOf(e *fstree.Entry) snap { return snap{Stamp: e.Stamp} }

// same reports whether nothing changed, by fstree's one rule (the ctime
// counts; a directory's own size and times do not).
func (a snap) same(b snap) bool { return !fstree.Changed(a.Stamp, b.Stamp) }

// newEffects records the start state. With no write-deny rules only the
// set-id and device check runs.
func newEffects(root string, rules *wire.Rules, match Matcher) (*effects, error) {
	e := &effects{root: root, match: match, base: map[string]snap{}, special: map[string]snap{}}
	if rules != nil && match != nil {
		e.deny = rules.Deny
		for _, g := range e.deny {
			var lit []string
			for _, seg := range strings.Split(g, "/") {
				if seg != "" && seg != "**" && !strings.ContainsAny(seg, `*?[]{}\`) {
					lit = append(lit, seg)
				}
			}
			e.lits = append(e.lits, lit)
		}
	}
	if _, err := os.Stat(root); err != nil {
		return e, nil // no workspace (tests, or none mounted): nothing to watch
	}
	_, _, err := e.walk(func(en *fstree.Entry) bool {
		rel, s := en.Rel, snapOf(en)
		if special(en.Mode) {
			e.special[rel] = s
		}
		if d, _ := e.denied(rel); d {
			if en.IsRegular() && en.Size <= maxKeptFile && e.kept+int(en.Size) <= maxKeptTotal {
				if b, err := readAt(en.Dirfd, en.Name, en.Size); err == nil {
					s.data, s.hasData = b, true
					e.kept += len(b)
				}
			}
			e.base[rel] = s
		}
		return true
	})
	if err != nil {
		return nil, fmt.Errorf("recording the workspace for the effects check: %w", err)
	}
	return e, nil
}

func special(mode uint32) bool {
	t := mode & unix.S_IFMT
	return t == unix.S_IFCHR || t == unix.S_IFBLK || (t != unix.S_IFLNK && mode&(unix.S_ISUID|unix.S_ISGID) != 0)
}

// denied reports whether a deny glob of files.write matches rel.
func (e *effects) denied(rel string) (bool, string) {
	if len(e.deny) == 0 {
		return false, ""
	}
	segs := strings.Split(rel, "/")
	for i := range e.deny {
		if !hasAll(segs, e.lits[i]) {
			continue
		}
		if d, rule := e.match(nil, e.deny[i:i+1], rel, true); d && strings.Contains(rule, ".deny[") {
			return true, fmt.Sprintf("files.write.deny[%d]", i)
		}
	}
	return false, ""
}

func hasAll(segs, lits []string) bool {
	for _, l := range lits {
		found := false
		for _, s := range segs {
			if s == l {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// check walks the workspace once and undoes what it must.
func (e *effects) check() []wire.Alarm {
	if _, err := os.Stat(e.root); err != nil {
		return nil
	}
	var alarms []wire.Alarm
	add := func(rel, what, action, rule string) {
		alarms = append(alarms, wire.Alarm{Path: []byte(rel), What: what, Action: action, Rule: rule})
	}
	seen := map[string]bool{}
	complete, why, err := e.walk(func(en *fstree.Entry) bool {
		rel, dirfd, name, s := en.Rel, en.Dirfd, en.Name, snapOf(en)
		typ := en.Type()
		if d, rule := e.denied(rel); d {
			seen[rel] = true
			old, existed := e.base[rel]
			switch {
			case !existed:
				if unix.Unlinkat(dirfd, name, 0) == nil || removeTree(dirfd, name) == nil {
					add(rel, "created", "removed", rule)
				} else {
					add(rel, "created", "reported", rule)
				}
				return false
			case !old.same(s):
				if old.hasData && restore(dirfd, name, old) == nil {
					if n, err := fstatat(dirfd, name); err == nil {
						n.data, n.hasData = old.data, true
						e.base[rel] = n
					}
					add(rel, "changed", "restored", rule)
				} else {
					e.base[rel] = s
					add(rel, "changed", "reported", rule)
				}
				if typ != unix.S_IFDIR {
					return false
				}
			}
		}
		if !special(en.Mode) {
			return true
		}
		if old, ok := e.special[rel]; ok && old.same(s) {
			return true
		}
		if typ == unix.S_IFCHR || typ == unix.S_IFBLK {
			if unix.Unlinkat(dirfd, name, 0) == nil {
				add(rel, "device", "removed", "")
			} else {
				add(rel, "device", "reported", "")
			}
			return false
		}
		if unix.Fchmodat(dirfd, name, en.Mode&0o1777, 0) == nil {
			add(rel, "setid", "cleared", "")
		} else {
			add(rel, "setid", "reported", "")
		}
		return true
	})
	if err != nil || !complete {
		if err != nil {
			why = err.Error()
		}
		add(".", "incomplete", "reported", "the effects check missed entries: "+why)
	}
	for rel, old := range e.base {
		if seen[rel] || !complete {
			continue
		}
		if old.hasData && restorePath(e.root, rel, old) == nil {
			if n, err := fstatat(unix.AT_FDCWD, e.root+"/"+rel); err == nil {
				n.data, n.hasData = old.data, true
				e.base[rel] = n
			}
			add(rel, "removed", "restored", "")
			continue
		}
		delete(e.base, rel)
		add(rel, "removed", "reported", "")
	}
	return alarms
}
