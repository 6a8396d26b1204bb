package workspace

import (
	"errors"
	"path"
	"strconv"
	"strings"

	"github.com/agentbox/agentbox/internal/fstree"
	"golang.org/x/sys/unix"
)

// maxLinkHops is how many links a resolution follows (the kernel's
// limit); a chain longer than that is held.
const maxLinkHops = 40

// linkText reports whether a link target, by its text alone, stays below
// the workspace from a directory depth levels down (0: the top): it is
// relative, it is any number of ".." followed by names only (no ".."
// after a name: a name may itself be a link), and it climbs no higher
// than depth. It returns the climb and the names. A link that passes, met
// while resolving from a real directory inside the workspace, leads to a
// real directory inside (the induction linkHazard completes).
func linkText(target string, depth int) (ups int, names []string, ok bool) {
	if target == "" || path.IsAbs(target) {
		return 0, nil, false
	}
	for _, c := range strings.Split(target, "/") {
		switch c {
		case "", ".":
		case "..":
			if len(names) > 0 {
				return 0, nil, false
			}
			ups++
		default:
			names = append(names, c)
		}
	}
	return ups, names, ups <= depth
}

// viewDir is a directory of the view the host will have after promotion:
// the staged layer's entries where they are promoted (or kept for apply),
// over the workspace's where those show through.
type viewDir struct {
	rel          string
	upper, lower bool // the staged layer, the workspace contribute entries
}

// lookup finds name in dir of the view: its stamp, a link's target and,
// for a directory, the view of it. found is false when nothing is there.
//
// The view is what promotion leaves on the host: a listed change that is
// not held as it was listed (the promoter writes the listed type and the
// listed link target, never a later read), everything else the
// workspace's own entry, except a staged directory over a workspace
// directory (its listed entries are promoted into it) and an entry kept
// for a copy's apply. The staging layer is not read for what it holds
// now: a process the sandbox kept changes it behind the walk, and that
// is never what the host gets. A real copy's tree (Stage.tree) is the
// whole view.
func (l *lister) lookup(dir viewDir, name string) (st fstree.Stamp, target string, child viewDir, found bool, err error) {
	rel := name
	if dir.rel != "" {
		rel = dir.rel + "/" + name
	}
	if l.s.tree {
		return l.lookupTree(dir, rel)
	}
	child = viewDir{rel: rel}
	if i, listed := l.index[rel]; listed && dir.upper {
		c := &l.out[i]
		switch {
		case c.Held != "": // the workspace keeps its own entry
		case c.Change == "deleted":
			return st, "", child, false, nil
		default:
			if c.upper.IsDir() {
				child.upper, child.lower = true, l.lowerIsDir(rel)
			}
			return c.upper, c.target, child, true, nil
		}
	} else if dir.upper {
		if _, kept := l.s.st.Kept[rel]; kept {
			if st, err = l.up.Stat(rel); err == nil && l.keptAs(rel, st) {
				return l.keptEntry(rel, st)
			}
			err = nil
		}
		if dir.lower {
			if low, lerr := l.low.Stat(rel); lerr == nil && low.IsDir() {
				// The workspace's directory, and whatever is listed
				// below it is promoted into it (the staging layer's
				// entry there now is never read: a kept process may
				// have swapped it since the walk).
				child.upper, child.lower = true, true
				return low, "", child, true, nil
			}
		}
		// Unlisted: promotion leaves the workspace's entry.
	}
	if !dir.lower {
		return st, "", child, false, nil
	}
	return l.lookupLower(rel)
}

// keptEntry is the view of the kept entry st at rel.
func (l *lister) keptEntry(rel string, st fstree.Stamp) (_ fstree.Stamp, target string, child viewDir, found bool, err error) {
	child = viewDir{rel: rel}
	if st.Whiteout() {
		return st, "", child, false, nil
	}
	if st.IsDir() {
		child.upper, child.lower = true, l.lowerIsDir(rel)
	}
	if st.IsSymlink() {
		if target, err = l.up.Readlink(rel); err != nil {
			return st, "", child, false, err
		}
	}
	return st, target, child, true, nil
}

// keptAs reports an entry decided and kept (a copy's checkpoint, for its
// apply) that is still the one kept.
func (l *lister) keptAs(rel string, st fstree.Stamp) bool {
	k, ok := l.s.st.Kept[rel]
	return ok && !fstree.Changed(k.Upper, st)
}

// lookupLower is the workspace's entry at rel.
func (l *lister) lookupLower(rel string) (st fstree.Stamp, target string, child viewDir, found bool, err error) {
	child = viewDir{rel: rel}
	st, err = l.low.Stat(rel)
	if errors.Is(err, unix.ENOENT) {
		return st, "", child, false, nil
	}
	if err != nil {
		return st, "", child, false, err
	}
	if st.IsDir() {
		child.lower = true
	}
	if st.IsSymlink() {
		if target, err = l.low.Readlink(rel); err != nil {
			return st, "", child, false, err
		}
	}
	return st, target, child, true, nil
}

// lookupTree is lookup in a real copy's tree: the tree is the view
// (its unlisted entries are the workspace's, copied).
func (l *lister) lookupTree(dir viewDir, rel string) (st fstree.Stamp, target string, child viewDir, found bool, err error) {
	child = viewDir{rel: rel}
	i, listed := l.index[rel]
	if dir.upper && !(listed && l.out[i].Held != "") { // held: the workspace keeps its own entry
		st, err = l.up.Stat(rel)
		switch {
		case err == nil && st.Whiteout():
			return st, "", child, false, nil
		case err == nil:
			child.upper = st.IsDir()
			if st.IsSymlink() {
				if listed {
					target = l.out[i].target
				} else if target, err = l.up.Readlink(rel); err != nil {
					return st, "", child, false, err
				}
			}
			return st, target, child, true, nil
		case !errors.Is(err, unix.ENOENT):
			return st, "", child, false, err
		}
	}
	if !dir.lower {
		return st, "", child, false, nil
	}
	return l.lookupLower(rel)
}

func (l *lister) lowerIsDir(rel string) bool {
	st, err := l.low.Stat(rel)
	return err == nil && st.IsDir()
}

// linkHazard judges the link rel with target by where it resolves in the
// view the host will have: following every link on the way (at most
// maxLinkHops), each must pass linkText from the directory it sits in.
// "" when it stays inside; otherwise why it is held, with the fix.
func (l *lister) linkHazard(rel, target string) string {
	why, _ := l.linkResolve(rel, target)
	return why
}

// linkResolve is linkHazard that also returns, for a link that stays
// inside, every path its resolution went through: the promoter holds it
// when one of them is not promoted as listed after all.
func (l *lister) linkResolve(rel, target string) (why string, through []string) {
	stack := []viewDir{{upper: true, lower: !l.s.tree}}
	if d := path.Dir(rel); d != "." {
		for _, name := range strings.Split(d, "/") {
			st, _, child, found, err := l.lookup(stack[len(stack)-1], name)
			if err != nil || !found || !st.IsDir() {
				return "a symlink below " + strconv.Quote(d) + ", which is not a directory in the workspace, is never promoted", nil
			}
			stack = append(stack, child)
		}
	}
	var queue []string
	via := rel
	climb := func(t string) bool {
		ups, names, ok := linkText(t, len(stack)-1)
		if !ok {
			return false
		}
		stack = stack[:len(stack)-ups]
		queue = append(names, queue...)
		return true
	}
	if !climb(target) {
		return symlinkWhy(target), nil
	}
	for hops := 0; len(queue) > 0; {
		name := queue[0]
		queue = queue[1:]
		st, t, child, found, err := l.lookup(stack[len(stack)-1], name)
		through = append(through, child.rel)
		switch {
		case err != nil:
			return "a symlink whose target could not be followed in the workspace (" + err.Error() + ") is never promoted", nil
		case !found:
			return "", through // nothing there: the name resolves inside, to nothing
		case st.IsDir():
			stack = append(stack, child)
		case st.IsSymlink():
			hops++
			via = child.rel
			if hops > maxLinkHops {
				return "a symlink that resolves through more than 40 links is never promoted; point it at its destination directly", nil
			}
			if !climb(t) {
				return "a symlink that resolves outside the workspace through the link " + strconv.Quote(via) + " (to " +
					strconv.Quote(t) + ") is never promoted; point it at a path inside the workspace without going through that link", nil
			}
		default:
			return "", through // a file: a name after it does not resolve
		}
	}
	return "", through
}
