package workspace

import (
	_ "embed"
	"fmt"
	"path"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

//go:embed hostrun.yaml
var hostRunYAML []byte

// HostRunEntry is one entry of the host-run catalogue (hostrun.yaml): the
// files a host tool runs or loads by itself, by family.
type HostRunEntry struct {
	Family string   `yaml:"family"`
	Tool   string   `yaml:"tool"`
	Names  []string `yaml:"names"`
	At     string   `yaml:"at"` // any | root
	Rule   string   `yaml:"rule,omitempty"`
	Why    string   `yaml:"why"`

	// pats are the names expanded ({a,b}) and folded, split on "/".
	pats [][]string
}

// HostRunCatalogue is the catalogue: its families in README's order and
// its entries.
type HostRunCatalogue struct {
	Families []string       `yaml:"families"`
	Entries  []HostRunEntry `yaml:"entries"`

	// byFirst indexes the patterns by their first segment when it is
	// plain (no meta character); globFirst are the others. Match then
	// tries, at each place of a path, only the patterns that can match
	// there (every path of a call is matched).
	byFirst   map[string][]patRef
	globFirst []patRef
}

// patRef is one pattern of entry Entries[entry].
type patRef struct {
	entry int
	pat   []string
}

// HostRun is the built-in catalogue. A catalogue that does not load is a
// build mistake the tests catch; the binary refuses to start with it
// rather than hold nothing.
var HostRun = mustCatalogue(hostRunYAML)

func mustCatalogue(b []byte) *HostRunCatalogue {
	c, err := parseCatalogue(b)
	if err != nil {
		panic(fmt.Sprintf("workspace/hostrun.yaml: %v", err))
	}
	return c
}

// parseCatalogue reads and checks a catalogue: every entry has a known
// family, a tool, names, a place (at) and a reason, and every name is a
// valid pattern.
func parseCatalogue(b []byte) (*HostRunCatalogue, error) {
	var c HostRunCatalogue
	dec := yaml.NewDecoder(strings.NewReader(string(b)))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("reading the host-run catalogue: %w", err)
	}
	if len(c.Families) == 0 || len(c.Entries) == 0 {
		return nil, fmt.Errorf("the host-run catalogue lists no families or no entries")
	}
	for i := range c.Entries {
		e := &c.Entries[i]
		where := fmt.Sprintf("entry %d (%s)", i+1, e.Tool)
		switch {
		case !slices.Contains(c.Families, e.Family):
			return nil, fmt.Errorf("%s: family %q is not one of %q", where, e.Family, c.Families)
		case e.Tool == "" || e.Why == "" || len(e.Names) == 0:
			return nil, fmt.Errorf("%s: tool, names and why are required", where)
		case e.At != "any" && e.At != "root":
			return nil, fmt.Errorf("%s: at is %q, want any or root", where, e.At)
		case e.Rule != "" && e.Rule != "git-repository":
			return nil, fmt.Errorf("%s: rule is %q, want git-repository or none", where, e.Rule)
		}
		for _, n := range e.Names {
			for _, x := range expandBraces(n) {
				if x == "" || strings.HasPrefix(x, "/") || strings.HasSuffix(x, "/") || strings.Contains(x, "//") {
					return nil, fmt.Errorf("%s: name %q is not a relative path", where, x)
				}
				if _, err := path.Match(x, ""); err != nil {
					return nil, fmt.Errorf("%s: name %q: %w", where, x, err)
				}
				e.pats = append(e.pats, foldPath(x))
			}
		}
	}
	c.byFirst = map[string][]patRef{}
	for i := range c.Entries {
		for _, p := range c.Entries[i].pats {
			if strings.ContainsAny(p[0], globMeta) {
				c.globFirst = append(c.globFirst, patRef{i, p})
			} else {
				c.byFirst[p[0]] = append(c.byFirst[p[0]], patRef{i, p})
			}
		}
	}
	return &c, nil
}

// globMeta are the bytes that make a pattern more than its text.
const globMeta = `*?[\`

// expandBraces expands {a,b} alternatives (not nested).
func expandBraces(s string) []string {
	i := strings.IndexByte(s, '{')
	j := strings.IndexByte(s, '}')
	if i < 0 || j < i {
		return []string{s}
	}
	var out []string
	for _, alt := range strings.Split(s[i+1:j], ",") {
		out = append(out, expandBraces(s[:i]+alt+s[j+1:])...)
	}
	return out
}

// Expanded lists the entry's names with their {a,b} alternatives expanded.
func (e *HostRunEntry) Expanded() []string {
	var out []string
	for _, n := range e.Names {
		out = append(out, expandBraces(n)...)
	}
	return out
}

// Rule is the hazard rule a match of the entry holds with.
func (e *HostRunEntry) rule() string {
	if e.Rule == "git-repository" {
		return HazardGitRepo
	}
	return HazardHostRun
}

// Match finds the entry a workspace path falls under: the path is one of
// its names, or below one, at a place the entry says the tool reads it.
// With leaf (the entry at rel is not a directory: a file, a link) a path
// that stands where a name's directory goes (.cargo for .cargo/config) is
// a match too: a link there would lead the tool elsewhere. skipOwnGit
// leaves out the match of .git at the top (the caller decides the
// workspace's own repository).
func (c *HostRunCatalogue) Match(rel string, leaf, skipOwnGit bool) *HostRunEntry {
	segs := foldPath(rel)
	if c.byFirst != nil {
		return c.match(segs, leaf, skipOwnGit)
	}
	for i := range c.Entries {
		e := &c.Entries[i]
		for _, p := range e.pats {
			for start := 0; start < len(segs); start++ {
				if e.At == "root" && start > 0 {
					break
				}
				if skipOwnGit && start == 0 && p[0] == ".git" && len(p) == 1 {
					continue
				}
				if matchSegs(p, segs[start:], leaf) {
					return e
				}
			}
		}
	}
	return nil
}

// match is Match through the index: the first entry (in the
// catalogue's order) with a pattern that matches at some place of segs.
func (c *HostRunCatalogue) match(segs []string, leaf, skipOwnGit bool) *HostRunEntry {
	best := -1
	try := func(r patRef, start int) {
		if best >= 0 && r.entry >= best {
			return
		}
		if c.Entries[r.entry].At == "root" && start > 0 {
			return
		}
		if skipOwnGit && start == 0 && r.pat[0] == ".git" && len(r.pat) == 1 {
			return
		}
		if matchSegs(r.pat, segs[start:], leaf) {
			best = r.entry
		}
	}
	for start := range segs {
		for _, r := range c.byFirst[segs[start]] {
			try(r, start)
		}
		for _, r := range c.globFirst {
			try(r, start)
		}
	}
	if best < 0 {
		return nil
	}
	return &c.Entries[best]
}

// matchSegs reports whether segs starts with the pattern p, or (leaf) is
// a proper prefix of it.
func matchSegs(p, segs []string, leaf bool) bool {
	n := min(len(p), len(segs))
	if len(segs) < len(p) && !leaf {
		return false
	}
	for k := 0; k < n; k++ {
		if !segMatch(p[k], segs[k]) {
			return false
		}
	}
	return true
}

// segMatch is path.Match(pat, name) for one folded segment, without
// path.Match for the usual answer: a pattern that starts with a plain
// byte matches no name that starts with another, and one without a
// meta character only the name it spells (every path of a call is
// matched against every name of the catalogue).
func segMatch(pat, name string) bool {
	if pat != "" && strings.IndexByte(globMeta, pat[0]) < 0 && (name == "" || name[0] != pat[0]) {
		return false
	}
	if !strings.ContainsAny(pat, globMeta) {
		return pat == name
	}
	ok, _ := path.Match(pat, name)
	return ok
}
