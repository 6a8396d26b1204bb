package policy

import (
	"fmt"
	"path"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// writers are commands whose path arguments may be written (or removed):
// their arguments are also checked against files.write's deny globs.
var writers = map[string]bool{
	"cp": true, "mv": true, "tee": true, "install": true, "ln": true, "touch": true,
	"truncate": true, "rm": true, "chmod": true, "chown": true, "dd": true, "sed": true,
	"rsync": true, "patch": true, "unlink": true, "shred": true,
}

// checkArgs denies a command whose literal arguments name a file the file
// rules explicitly deny: `cat .env` is refused like `read_file .env`, and
// `cp x .git/hooks/pre-commit` like a write there. Only the deny globs
// count here (an argument is often not a path at all, so "unmatched" says
// nothing), and only plain words: options are skipped, `--opt=value` and
// `of=value` are checked by their value, glob patterns are left alone.
// This is defence in depth; a command can still reach a file through a
// name computed at run time.
func (a *analyser) checkArgs(base string, cl *cmdline) {
	write := writers[base]
	for _, w := range cl.words[1:] {
		if w.kind != wStatic {
			continue
		}
		arg := w.text
		cands := readAliases(arg)
		if strings.HasPrefix(arg, "-") {
			_, v, ok := strings.Cut(arg, "=")
			if ok {
				cands = append(cands, v)
			}
		} else if k, v, ok := strings.Cut(arg, "="); ok && !strings.Contains(k, "/") {
			cands = append(cands, v) // dd's of=FILE and the like
		} else {
			cands = append(cands, arg)
		}
		for _, arg := range cands {
			if arg == "" || strings.ContainsAny(arg, "*?[{") || checkPath(arg) != "" {
				continue
			}
			if p, ok := a.deniedArg(arg, false); ok {
				p.Argv = cl.argv()
				a.add(p, nil)
				return
			}
			if write {
				if p, ok := a.deniedArg(arg, true); ok {
					p.Argv = cl.argv()
					a.add(p, nil)
					return
				}
			}
		}
	}
}

// deniedArg matches arg, from every directory the shell may be in, against
// the deny globs of files.read (write false) or files.write.
func (a *analyser) deniedArg(arg string, write bool) (Part, bool) {
	r, list := a.p.read, "files.read"
	if write {
		r, list = a.p.write, "files.write"
	}
	// The last element of the path does not depend on the directory
	// (unless it is . or ..): filter the globs by it once.
	var cand []int
	base := path.Base(arg)
	for i, g := range r.deny {
		if base == "." || base == ".." || lastSegmentMayMatch(g, base) {
			cand = append(cand, i)
		}
	}
	if len(cand) == 0 {
		return Part{}, false
	}
	arg = unalias(arg)
	dirs := a.cwds
	if a.scope != nil {
		dirs = a.scope.dirs
	}
	if len(dirs) == 0 || path.IsAbs(arg) {
		dirs = []string{workspace}
	}
	for _, dir := range dirs {
		target := arg
		if !path.IsAbs(target) {
			target = path.Join(dir, target)
		}
		rel := relPath(target)
		abs := strings.HasPrefix(rel, "/")
		for _, i := range cand {
			g := r.deny[i]
			if strings.HasPrefix(g, "/") == abs && doublestar.MatchUnvalidated(g, rel) {
				what := "reading"
				if write {
					what = "writing"
				}
				return Part{Verdict: Deny, Rule: fmt.Sprintf("%s.deny[%d]", list, i), Pattern: g,
					Note: fmt.Sprintf("argument %s names a file the policy denies %s", arg, what)}, true
			}
		}
	}
	return Part{}, false
}

// lastSegmentMayMatch is a cheap necessary condition for glob g to match a
// path whose last element is base: g's last segment must match base (a
// "**" or a brace pattern there says nothing). Most arguments fail it, so
// the full doublestar match runs rarely.
func lastSegmentMayMatch(g, base string) bool {
	last := g[strings.LastIndexByte(g, '/')+1:]
	if last == "**" || strings.ContainsAny(last, "{\\") {
		return true
	}
	if !strings.ContainsAny(last, "*?[") {
		return last == base
	}
	if last[0] == '*' && !strings.ContainsAny(last[1:], "*?[") {
		return strings.HasSuffix(base, last[1:]) // "*.pem"
	}
	ok, err := path.Match(last, base)
	return ok || err != nil
}
