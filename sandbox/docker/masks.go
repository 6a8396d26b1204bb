package docker

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/agentbox/agentbox/sandbox"
	"github.com/bmatcuk/doublestar/v4"
)

// MaxFileMasks bounds the mounts the kernel-level file rules add to one
// sandbox. More matches are a configuration error: agentbox refuses to run
// rather than run with some paths unguarded.
const MaxFileMasks = 256

// maskKind is what the kernel does to one existing workspace path.
type maskKind int

const (
	maskReadOnly maskKind = iota + 1 // files.write.deny: mounted read-only over itself
	maskHidden                       // files.read.deny: an empty read-only file or directory over it
)

// maskEntry is one path to protect, relative to the workspace root, with no
// symbolic link in any of its components.
type maskEntry struct {
	rel  string
	kind maskKind
	dir  bool
	rule string // "files.read.deny[2]"
}

// denyGlob is one deny glob with what makes matching it cheap.
type denyGlob struct {
	rule    string
	glob    string
	kind    maskKind
	base    string // literal directory prefix ("." for none)
	literal bool   // no meta character at all: one lstat decides
	last    string // last element, for a cheap prefilter on the base name
	lastLit bool   // last element has no meta character
	lastAny bool   // last element cannot prefilter ("**", braces)
	// prefix*suffix: a last element with one star and no other meta
	// character, matched without path.Match.
	star           bool
	prefix, suffix string
}

func compileGlobs(list []string, name string, kind maskKind) []denyGlob {
	var out []denyGlob
	for i, g := range list {
		if g == "" || strings.HasPrefix(g, "/") {
			continue // absolute globs name paths outside the workspace
		}
		base, _ := doublestar.SplitPattern(g)
		last := path.Base(g)
		dg := denyGlob{
			rule: fmt.Sprintf("%s[%d]", name, i), glob: g, kind: kind, base: base,
			literal: !hasMeta(g), last: last, lastLit: !hasMeta(last),
			lastAny: strings.Contains(last, "**") || strings.ContainsAny(last, "{}"),
		}
		if pre, suf, ok := strings.Cut(last, "*"); ok && !hasMeta(pre) && !hasMeta(suf) {
			dg.star, dg.prefix, dg.suffix = true, pre, suf
		}
		out = append(out, dg)
	}
	return out
}

func hasMeta(s string) bool { return strings.ContainsAny(s, `*?[]{}\`) }

// candidate is the cheap test before the full match: can the glob match a
// path whose last element is name?
func (g *denyGlob) candidate(name string) bool {
	switch {
	case g.lastAny:
		return true
	case g.lastLit:
		return g.last == name
	case g.star:
		return len(name) >= len(g.prefix)+len(g.suffix) && strings.HasPrefix(name, g.prefix) && strings.HasSuffix(name, g.suffix)
	}
	ok, err := path.Match(g.last, name)
	return ok || err != nil
}

// planMasks finds every existing workspace path the deny globs match.
// Symbolic links are never followed out of the workspace: a link that
// matches protects the in-workspace path it resolves to (as the sandbox
// sees it); a link resolving outside, or nowhere, protects nothing (the
// sandbox cannot reach the host behind it). A matched directory is
// protected as a whole and a hidden one is not walked.
//
// A directory the walk cannot read is skipped when strict is false (the
// sandbox runs as the same user and cannot read it either); when strict,
// it refuses.
func planMasks(ctx context.Context, ws string, readDeny, writeDeny []string, strict bool) ([]maskEntry, error) {
	globs := append(compileGlobs(readDeny, "files.read.deny", maskHidden), compileGlobs(writeDeny, "files.write.deny", maskReadOnly)...)
	if len(globs) == 0 {
		return nil, nil
	}
	p := &planner{ws: ws, globs: globs, found: map[string]*maskEntry{}, strict: strict}
	var roots []string
	for i := range globs {
		g := &globs[i]
		if g.literal {
			p.visitLiteral(g.glob)
			continue
		}
		roots = append(roots, g.base)
	}
	for _, r := range topmost(roots) {
		if err := p.walk(ctx, r); err != nil {
			return nil, err
		}
	}
	if p.err != nil {
		return nil, p.err
	}
	return p.result()
}

// topmost drops the roots below another root (or duplicates).
func topmost(roots []string) []string {
	slices.Sort(roots)
	roots = slices.Compact(roots)
	var out []string
	for _, r := range roots {
		covered := slices.ContainsFunc(out, func(o string) bool { return o == "." || strings.HasPrefix(r, o+"/") })
		if !covered {
			out = append(out, r)
		}
	}
	return out
}

type planner struct {
	ws     string
	globs  []denyGlob
	found  map[string]*maskEntry
	counts map[string]int
	strict bool
	err    error
}

// visitLiteral checks one literal glob: the path itself, reached without
// following a symbolic link in any parent component.
func (p *planner) visitLiteral(rel string) {
	rel = path.Clean(rel)
	if !p.realParents(rel) {
		return
	}
	fi, err := os.Lstat(filepath.Join(p.ws, filepath.FromSlash(rel)))
	if err != nil {
		return
	}
	p.match(rel, fs.FileInfoToDirEntry(fi))
}

// realParents reports whether every parent component of rel exists in the
// workspace as a real directory (not a symbolic link).
func (p *planner) realParents(rel string) bool {
	dir := path.Dir(rel)
	if dir == "." {
		return true
	}
	cur := p.ws
	for _, c := range strings.Split(dir, "/") {
		cur = filepath.Join(cur, c)
		fi, err := os.Lstat(cur)
		if err != nil || !fi.IsDir() {
			return false
		}
	}
	return true
}

// walk visits every entry below the workspace directory root (relative),
// never following a symbolic link.
func (p *planner) walk(ctx context.Context, root string) error {
	if root != "." && !p.realParents(root+"/x") {
		// A parent is a link (or missing): what is behind it is judged by
		// its real path; the link itself is an entry of its own directory.
		p.visitLinkOnPath(root)
		return nil
	}
	n := 0
	start := filepath.Join(p.ws, filepath.FromSlash(root))
	return filepath.WalkDir(start, func(full string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) && !p.strict {
				return nil // unreadable: the sandbox, running as the same user, cannot read it either
			}
			return fmt.Errorf("%w: walking the workspace for the file rules: %v; agentbox does not run with paths it could not check", sandbox.ErrConfig, err)
		}
		if n++; n%4096 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		if full == p.ws {
			return nil
		}
		rel := filepath.ToSlash(full[len(p.ws)+1:])
		if e := p.match(rel, d); e != nil && e.kind == maskHidden && d.IsDir() {
			return filepath.SkipDir // hidden whole: nothing below is visible
		}
		return nil
	})
}

// visitLinkOnPath handles a glob base reached through a symbolic link: the
// first link on the way is matched as an entry.
func (p *planner) visitLinkOnPath(root string) {
	cur := ""
	for _, c := range strings.Split(root, "/") {
		cur = path.Join(cur, c)
		fi, err := os.Lstat(filepath.Join(p.ws, filepath.FromSlash(cur)))
		if err != nil {
			return
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			p.match(cur, fs.FileInfoToDirEntry(fi))
			return
		}
	}
}

// match decides one entry; it returns the entry recorded for rel, if any.
func (p *planner) match(rel string, d fs.DirEntry) *maskEntry {
	name := path.Base(rel)
	var hit *denyGlob
	for i := range p.globs {
		g := &p.globs[i]
		if g.base != "." && rel != g.base && !strings.HasPrefix(rel, g.base+"/") {
			continue
		}
		if !g.candidate(name) || !doublestar.MatchUnvalidated(g.glob, rel) {
			continue
		}
		if hit == nil || g.kind > hit.kind {
			hit = g
		}
		if hit.kind == maskHidden {
			break
		}
	}
	if hit == nil {
		return nil
	}
	target, dir := rel, d.IsDir()
	if d.Type()&fs.ModeSymlink != 0 {
		var ok bool
		target, dir, ok = resolveInside(p.ws, rel)
		if !ok {
			return nil // outside the workspace or dangling: nothing of the host to protect
		}
	}
	return p.add(target, dir, hit)
}

func (p *planner) add(rel string, dir bool, g *denyGlob) *maskEntry {
	if p.err != nil {
		return nil
	}
	if !utf8.ValidString(rel) || strings.ContainsFunc(rel, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		p.err = fmt.Errorf("%w: %s %q matches %q, whose name is not printable UTF-8 and cannot be protected by a mount; rename it or narrow the rule", sandbox.ErrConfig, g.rule, g.glob, rel)
		return nil
	}
	if p.counts == nil {
		p.counts = map[string]int{}
	}
	if e, ok := p.found[rel]; ok {
		if g.kind > e.kind {
			e.kind, e.rule = g.kind, g.rule
		}
		return e
	}
	p.counts[g.rule]++
	e := &maskEntry{rel: rel, kind: g.kind, dir: dir, rule: g.rule}
	p.found[rel] = e
	if len(p.found) > 16*MaxFileMasks {
		// Far more than any directory dedup can save: stop walking.
		p.err = p.tooMany(p.counts, len(p.found))
		return nil
	}
	return e
}

// result drops what a protected directory covers already (everything
// inside a hidden one; read-only entries inside a read-only one) and sorts
// parents before children.
func (p *planner) result() ([]maskEntry, error) {
	out := make([]maskEntry, 0, len(p.found))
	for _, e := range p.found {
		out = append(out, *e)
	}
	slices.SortFunc(out, func(a, b maskEntry) int { return strings.Compare(a.rel, b.rel) })
	var kept []maskEntry
	var hidden, readOnly []string
	under := func(dirs []string, rel string) bool {
		return slices.ContainsFunc(dirs, func(d string) bool { return strings.HasPrefix(rel, d+"/") })
	}
	for _, e := range out {
		if under(hidden, e.rel) || e.kind == maskReadOnly && under(readOnly, e.rel) {
			continue
		}
		if e.dir && e.kind == maskHidden {
			hidden = append(hidden, e.rel)
		} else if e.dir {
			readOnly = append(readOnly, e.rel)
		}
		kept = append(kept, e)
	}
	if len(kept) > MaxFileMasks {
		counts := map[string]int{}
		for _, e := range kept {
			counts[e.rule]++
		}
		return nil, p.tooMany(counts, len(kept))
	}
	return kept, nil
}

// tooMany is the configuration error for more matches than mounts allowed,
// naming the rule with the most.
func (p *planner) tooMany(counts map[string]int, total int) error {
	worst, n := "", 0
	for r, c := range counts {
		if c > n || c == n && r < worst {
			worst, n = r, c
		}
	}
	glob := ""
	for i := range p.globs {
		if p.globs[i].rule == worst {
			glob = p.globs[i].glob
		}
	}
	return fmt.Errorf("%w: the file rules match %d existing workspace paths, more than the %d agentbox protects by mounts (%s %q matches %d); agentbox does not run with some of them unguarded: narrow the rule, or deny their directory instead of each file",
		sandbox.ErrConfig, total, MaxFileMasks, worst, glob, n)
}
