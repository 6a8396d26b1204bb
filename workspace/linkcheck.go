package workspace

import (
	"errors"
	"fmt"
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
func (l *lister) lookup(dir viewDir, name string) (st fstree.Stamp, target string, child viewDir, found bool, err error) {
	rel := name
	if dir.rel != "" {
		rel = dir.rel + "/" + name
	}
	child = viewDir{rel: rel}
	i, listed := l.index[rel]
	if dir.upper && !(listed && l.out[i].Held != "") { // held: the workspace keeps its own entry
		st, err = l.up.Stat(rel)
		switch {
		case err == nil && listed && l.out[i].upper.Mode != 0 && fstree.Changed(l.out[i].upper, st):
			// Replaced since it was listed (a process the sandbox kept):
			// what is promoted is not what is read now.
			return st, "", child, false, fmt.Errorf("%s changed since it was listed", rel)
		case err == nil && !listed && !l.showsUnlisted(rel, st, dir):
			// Not listed, so not promoted: the host keeps its own entry
			// there (below, from the workspace). The walk misses what a
			// kept process swaps in behind it; reading that live would
			// judge a view the host never has.
		case err == nil && st.Whiteout():
			return st, "", child, false, nil
		case err == nil:
			if st.IsDir() {
				child.upper = true
				if dir.lower {
					child.lower = !l.upperOpaque(rel) && l.lowerIsDir(rel)
				}
			}
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

// showsUnlisted reports whether the staged entry st at rel, which the
// listing did not list, is part of the view: a directory over the
// workspace's own (its listed entries are promoted into it), or an entry
// decided and kept (for a copy's apply) and untouched since. Any other
// unlisted entry is the workspace's after promotion: the same as the
// staged one, promoted before, or one the walk did not see.
func (l *lister) showsUnlisted(rel string, st fstree.Stamp, dir viewDir) bool {
	if st.IsDir() && dir.lower && l.lowerIsDir(rel) {
		return true
	}
	k, ok := l.s.st.Kept[rel]
	return ok && !fstree.Changed(k.Upper, st)
}

func (l *lister) upperOpaque(rel string) bool {
	pfd, name, err := l.up.Parent(rel)
	if err != nil {
		return true // conservatively: the workspace's entries do not show
	}
	defer unix.Close(pfd)
	return opaque(pfd, name)
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
	stack := []viewDir{{upper: true, lower: !l.s.tree}}
	if d := path.Dir(rel); d != "." {
		for _, name := range strings.Split(d, "/") {
			st, _, child, found, err := l.lookup(stack[len(stack)-1], name)
			if err != nil || !found || !st.IsDir() {
				return "a symlink below " + strconv.Quote(d) + ", which is not a directory in the workspace, is never promoted"
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
		return symlinkWhy(target)
	}
	for hops := 0; len(queue) > 0; {
		name := queue[0]
		queue = queue[1:]
		st, t, child, found, err := l.lookup(stack[len(stack)-1], name)
		switch {
		case err != nil:
			return "a symlink whose target could not be followed in the workspace (" + err.Error() + ") is never promoted"
		case !found:
			return "" // nothing there: the name resolves inside, to nothing
		case st.IsDir():
			stack = append(stack, child)
		case st.IsSymlink():
			hops++
			via = child.rel
			if hops > maxLinkHops {
				return "a symlink that resolves through more than 40 links is never promoted; point it at its destination directly"
			}
			if !climb(t) {
				return "a symlink that resolves outside the workspace through the link " + strconv.Quote(via) + " (to " +
					strconv.Quote(t) + ") is never promoted; point it at a path inside the workspace without going through that link"
			}
		default:
			return "" // a file: a name after it does not resolve
		}
	}
	return ""
}
