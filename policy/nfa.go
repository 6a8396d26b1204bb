package policy

import (
	"errors"
	"slices"
	"strings"
)

// An nfa is a nondeterministic automaton over bytes built from the patterns
// of the policy language: command rules (words joined by NUL, '*' any run
// of bytes within a word, a prefix of the argv) and doublestar file globs.
// Deciding rule sets by automata makes inclusion and intersection exact
// (see prove.go), and every failure comes with a shortest witness.
type nfa struct {
	edges [][]nedge
	eps   [][]int32
	start []int32
	final []bool
}

// nedge is one transition: on byte c (any false), or on any byte not in
// except (any true).
type nedge struct {
	any    bool
	c      byte
	except string
	to     int32
}

func (e nedge) accepts(b byte) bool {
	if e.any {
		return strings.IndexByte(e.except, b) < 0
	}
	return e.c == b
}

func (n *nfa) state() int32 {
	n.edges = append(n.edges, nil)
	n.eps = append(n.eps, nil)
	n.final = append(n.final, false)
	return int32(len(n.edges) - 1)
}

func (n *nfa) lit(from int32, c byte) int32 {
	to := n.state()
	n.edges[from] = append(n.edges[from], nedge{c: c, to: to})
	return to
}

func (n *nfa) anyEdge(from, to int32, except string) {
	n.edges[from] = append(n.edges[from], nedge{any: true, except: except, to: to})
}

func (n *nfa) epsilon(from, to int32) { n.eps[from] = append(n.eps[from], to) }

// loop is X* for the bytes not in except, from 'from': the returned state
// follows the loop.
func (n *nfa) loop(from int32, except string) int32 {
	in := n.state()
	n.epsilon(from, in)
	n.anyEdge(in, in, except)
	return in
}

func (n *nfa) literal(from int32, s string) int32 {
	for i := 0; i < len(s); i++ {
		from = n.lit(from, s[i])
	}
	return from
}

// errUnsupported is returned for patterns the automata do not model
// (character classes, '?', "***"): comparisons involving them stay
// unproven.
var errUnsupported = errors.New("character classes are not modelled")

// addWord appends a command rule word from 'from': '*' is any run of bytes
// but except.
func (n *nfa) addWord(from int32, w, except string) int32 {
	for i := 0; i < len(w); i++ {
		if w[i] == '*' {
			from = n.loop(from, except)
			continue
		}
		from = n.lit(from, w[i])
	}
	return from
}

// addRule adds a command rule as a new start: its words joined by NUL, the
// first also matching as the basename of a path, then any further words.
func (n *nfa) addRule(words []string) {
	s := n.state()
	n.start = append(n.start, s)
	if len(words) == 0 {
		n.final[n.loop(s, "")] = true
		return
	}
	end := n.state()
	n.epsilon(n.addWord(s, words[0], "\x00"), end)
	// A path whose basename matches: "dir/" "word" "/"*, containing '/'.
	dir := n.loop(s, "\x00")
	slash := n.lit(dir, '/')
	base := n.addWord(slash, words[0], "\x00/")
	n.epsilon(base, end)
	n.trailingSlashes(base, end)
	n.trailingSlashes(n.addWord(s, words[0], "\x00/"), end)
	cur := end
	for _, w := range words[1:] {
		cur = n.addWord(n.lit(cur, 0), w, "\x00")
	}
	n.final[cur] = true
	more := n.lit(cur, 0)
	n.final[n.loop(more, "")] = true
}

// trailingSlashes adds "/"+ from 'from' to 'to'.
func (n *nfa) trailingSlashes(from, to int32) {
	tr := n.lit(from, '/')
	n.edges[tr] = append(n.edges[tr], nedge{c: '/', to: tr})
	n.epsilon(tr, to)
}

// argvShape accepts every argv string: a non-empty first word, then words
// separated by NUL.
func argvShape() *nfa {
	n := &nfa{}
	s := n.state()
	n.start = []int32{s}
	w := n.state()
	n.anyEdge(s, w, "\x00")
	n.anyEdge(w, w, "")
	n.final[w] = true
	return n
}

// addGlob adds a doublestar glob (braces expanded) as new starts, after the
// prefix byte that tells relative from absolute paths (see pathKey).
func (n *nfa) addGlob(g string) error {
	alts, ok := expandBraces(g, 64)
	if !ok {
		return errUnsupported
	}
	for _, a := range alts {
		// '?' is one rune, not one byte: not modelled either; nor doublestar's
		// quirk of "a*/**" not matching "a" (it does match "ab" and "a/**" "a")
		if strings.ContainsAny(a, `[]?\`) || strings.Contains(a, "***") || quirkyStar(a) {
			return errUnsupported
		}
		s := n.state()
		n.start = append(n.start, s)
		cur := n.lit(s, pathKind(a))
		segs := strings.Split(a, "/")
		if strings.HasPrefix(a, "/") {
			cur, segs = n.lit(cur, '/'), segs[1:]
		}
		for i := 1; i < len(segs); i++ {
			if segs[i] == "**" && segs[i-1] == "**" {
				return errUnsupported // doublestar's "**/**" is not quite "**"
			}
		}
		slashed := true // the separator before segment i is already there
		for i, seg := range segs {
			last := i == len(segs)-1
			if seg == "**" {
				switch {
				case len(segs) == 1:
					cur = n.loop(cur, "")
				case last: // "" or "/" and anything
					next := n.state()
					n.epsilon(cur, next)
					in := n.lit(cur, '/')
					n.anyEdge(in, in, "")
					n.epsilon(in, next)
					cur = next
				default: // "" or "X/"
					if !slashed {
						cur = n.lit(cur, '/')
					}
					next := n.state()
					n.epsilon(cur, next)
					in := n.state()
					n.anyEdge(cur, in, "")
					n.anyEdge(in, in, "")
					n.edges[in] = append(n.edges[in], nedge{c: '/', to: next})
					cur, slashed = next, true
					continue
				}
				slashed = false
				continue
			}
			if !slashed {
				cur = n.lit(cur, '/')
			}
			for j := 0; j < len(seg); j++ {
				switch c := seg[j]; c {
				case '*':
					cur = n.loop(cur, "/")
				case '\\':
					if j+1 < len(seg) {
						j++
					}
					cur = n.lit(cur, seg[j])
				default:
					cur = n.lit(cur, c)
				}
			}
			slashed = false
		}
		n.final[cur] = true
	}
	return nil
}

// quirkyStar reports a segment that ends with '*' after other characters
// and is followed by "/**".
func quirkyStar(g string) bool {
	segs := strings.Split(g, "/")
	for i := 0; i+1 < len(segs); i++ {
		if segs[i+1] == "**" && len(segs[i]) > 1 && strings.HasSuffix(segs[i], "*") && segs[i] != "**" {
			return true
		}
	}
	return false
}

// pathKind is the first byte of a path key: 'A' for absolute paths, 'R'
// for paths relative to the workspace (MatchFile keeps them apart).
func pathKind(p string) byte {
	if strings.HasPrefix(p, "/") {
		return 'A'
	}
	return 'R'
}

// pathKey is the string the glob automata read for a path.
func pathKey(p string) string { return string(pathKind(p)) + p }

// expandBraces expands {a,b} alternatives (nested too), at most limit
// results.
func expandBraces(g string, limit int) ([]string, bool) {
	i := strings.IndexByte(g, '{')
	if i < 0 || i > 0 && g[i-1] == '\\' {
		return []string{g}, true
	}
	depth, j := 0, i
	var parts []string
	last := i + 1
	for ; j < len(g); j++ {
		switch g[j] {
		case '{':
			depth++
		case '}':
			depth--
		case ',':
			if depth == 1 {
				parts = append(parts, g[last:j])
				last = j + 1
			}
		}
		if depth == 0 {
			break
		}
	}
	if j >= len(g) {
		return nil, false
	}
	parts = append(parts, g[last:j])
	var out []string
	for _, p := range parts {
		sub, ok := expandBraces(g[:i]+p+g[j+1:], limit)
		if !ok || len(out)+len(sub) > limit {
			return nil, false
		}
		out = append(out, sub...)
	}
	return out, true
}

// matches reports whether n accepts s (tests cross-check the automata
// against the matchers the policy uses).
func (n *nfa) matches(s string) bool {
	set := n.closure(n.start, nil)
	for i := 0; i < len(s) && len(set) > 0; i++ {
		set = n.step(set, s[i], nil)
	}
	return n.accepting(set)
}

func (n *nfa) accepting(set []int32) bool {
	for _, q := range set {
		if n.final[q] {
			return true
		}
	}
	return false
}

// closure is the epsilon closure of states, sorted.
func (n *nfa) closure(states []int32, seen []bool) []int32 {
	if seen == nil {
		seen = make([]bool, len(n.edges))
	}
	var out []int32
	stack := append([]int32(nil), states...)
	for len(stack) > 0 {
		q := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[q] {
			continue
		}
		seen[q] = true
		out = append(out, q)
		stack = append(stack, n.eps[q]...)
	}
	for _, q := range out {
		seen[q] = false
	}
	sortInt32(out)
	return out
}

func (n *nfa) step(set []int32, b byte, seen []bool) []int32 {
	var next []int32
	for _, q := range set {
		for _, e := range n.edges[q] {
			if e.accepts(b) {
				next = append(next, e.to)
			}
		}
	}
	if len(next) == 0 {
		return nil
	}
	return n.closure(next, seen)
}

func sortInt32(a []int32) { slices.Sort(a) }
