package policy

import (
	"fmt"
	"path"
	"strings"
	"unicode/utf8"

	"github.com/agentbox/agentbox/sandbox"
	"github.com/bmatcuk/doublestar/v4"
)

// workspace is where the workspace is mounted inside the sandbox; the
// shell's working directory and the root of relative file globs.
const workspace = sandbox.WorkspaceDir

const (
	maxPathBytes      = 4096
	maxComponentBytes = 255
)

// MatchFile decides a path by the file globs of one list (files.read when
// write is false, files.write when true): deny globs first, then allow
// globs, and a path no glob matches is denied ("files.read.default").
//
// rel is relative to the workspace root ("src/main.go", "." for the root)
// or absolute for a path outside it ("/etc/passwd"); relative globs only
// match relative paths and absolute globs only absolute ones. The
// in-container executor calls it on the resolved path of a request.
func MatchFile(allow, deny []string, rel string, write bool) (Verdict, string, string) {
	list := "files.read"
	if write {
		list = "files.write"
	}
	abs := strings.HasPrefix(rel, "/")
	for i, g := range deny {
		if strings.HasPrefix(g, "/") == abs && doublestar.MatchUnvalidated(g, rel) {
			return Deny, fmt.Sprintf("%s.deny[%d]", list, i), g
		}
	}
	for i, g := range allow {
		if strings.HasPrefix(g, "/") == abs && doublestar.MatchUnvalidated(g, rel) {
			return Allow, fmt.Sprintf("%s.allow[%d]", list, i), g
		}
	}
	return Deny, list + ".default", ""
}

// checkPath refuses paths that cannot be decided safely.
func checkPath(p string) string {
	switch {
	case p == "":
		return "the path is empty"
	case strings.IndexByte(p, 0) >= 0:
		return "the path contains a NUL byte"
	case !utf8.ValidString(p):
		return "the path is not valid UTF-8"
	case len(p) > maxPathBytes:
		return "the path is longer than 4096 bytes"
	}
	for _, r := range p {
		if r < 0x20 || r == 0x7f {
			return "the path contains a control character"
		}
	}
	for _, c := range strings.Split(p, "/") {
		if len(c) > maxComponentBytes {
			return "a path component is longer than 255 bytes"
		}
	}
	return ""
}

// relPath cleans a path as the sandbox sees it: relative paths are joined
// to /workspace. It returns the path relative to the workspace root, or the
// absolute path when it is outside.
func relPath(p string) string {
	abs := p
	if !path.IsAbs(p) {
		abs = path.Join(workspace, p)
	}
	abs = path.Clean(abs)
	if abs == workspace {
		return "."
	}
	if r, ok := strings.CutPrefix(abs, workspace+"/"); ok {
		return r
	}
	return abs
}

// decideFile decides one path (a read_file/write_file path or a literal
// redirection target) by the file rules.
func (p *Policy) decideFile(raw string, write bool) Part {
	part := Part{Argv: []string{raw}}
	if why := checkPath(raw); why != "" {
		part.Verdict, part.Rule, part.Why = Deny, "files.invalid", why
		return part
	}
	r := p.read
	if write {
		r = p.write
	}
	rel := relPath(unalias(raw))
	part.Verdict, part.Rule, part.Pattern = MatchFile(r.allow, r.deny, rel, write)
	if rel != raw && strings.TrimPrefix(raw, "./") != rel {
		part.Note = "resolves to " + rel
	}
	return part
}

// cleanGlob normalises a file glob of the policy: a leading ./ or
// /workspace/ is removed and the path is cleaned.
func cleanGlob(g string) (string, error) {
	if g == "" {
		return "", fmt.Errorf("empty glob; use \"**\" for every file")
	}
	if !doublestar.ValidatePattern(g) {
		return "", fmt.Errorf("%q is not a valid glob (check brackets and braces)", g)
	}
	c := path.Clean(g)
	if c == workspace {
		c = "."
	} else if r, ok := strings.CutPrefix(c, workspace+"/"); ok {
		c = r
	}
	for _, comp := range strings.Split(c, "/") {
		if comp == ".." {
			return "", fmt.Errorf("%q contains \"..\"; write an absolute glob for paths outside the workspace", g)
		}
	}
	return c, nil
}
