package audit

import (
	"regexp"
	"regexp/syntax"
	"strings"
)

// minPrefilter is the shortest required literal worth checking for: a
// shorter one is in most text anyway.
const minPrefilter = 3

// prefiltered is a redact pattern with the literals one of which every
// match contains (lower case), so that text holding none of them skips
// the regexp: a pattern such as `(?i)(api[_-]?key|token|secret)\s*=\s*\S+`
// runs at a few MB/s, too slow for a command's whole output.
type prefiltered struct {
	re   *regexp.Regexp
	lits []string // nil: always run
}

func newPrefiltered(re *regexp.Regexp) prefiltered {
	return prefiltered{re: re, lits: mustContain(re.String())}
}

// skip reports whether the pattern cannot match text, whose lower case
// form is lower. foldSafe says text holds none of the non-ASCII runes
// that case-fold to ASCII letters (see foldSafe).
func (p prefiltered) skip(lower string, safe bool) bool {
	if p.lits == nil || !safe {
		return false
	}
	for _, l := range p.lits {
		if strings.Contains(lower, l) {
			return false
		}
	}
	return true
}

// foldSafe reports whether s holds neither U+017F (ſ, folds to s) nor
// U+212A (Kelvin sign, folds to k): the only runes outside ASCII whose
// case folding orbit holds an ASCII letter, which strings.ToLower does
// not map to it.
func foldSafe(s string) bool {
	return !strings.Contains(s, "\u017f") && !strings.Contains(s, "\u212a")
}

// mustContain returns lower-case literals one of which every match of expr
// contains, or nil when none is known (then the pattern always runs).
func mustContain(expr string) []string {
	t, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return nil
	}
	lits := required(t.Simplify())
	for _, l := range lits {
		if len(l) < minPrefilter {
			return nil
		}
	}
	return lits
}

// required is a set of literals one of which every match of t contains.
func required(t *syntax.Regexp) []string {
	switch t.Op {
	case syntax.OpLiteral:
		s := string(t.Rune)
		if t.Flags&syntax.FoldCase != 0 && !isASCII(s) {
			return nil // folding outside ASCII is not what ToLower does
		}
		return []string{strings.ToLower(s)}
	case syntax.OpCapture, syntax.OpPlus:
		return required(t.Sub[0])
	case syntax.OpRepeat:
		if t.Min >= 1 {
			return required(t.Sub[0])
		}
	case syntax.OpConcat:
		var best []string
		for _, sub := range t.Sub {
			if r := required(sub); r != nil && (best == nil || shortest(r) > shortest(best)) {
				best = r
			}
		}
		return best
	case syntax.OpAlternate:
		var all []string
		for _, sub := range t.Sub {
			r := required(sub)
			if r == nil {
				return nil
			}
			all = append(all, r...)
		}
		return all
	}
	return nil
}

func shortest(lits []string) int {
	n := -1
	for _, l := range lits {
		if n < 0 || len(l) < n {
			n = len(l)
		}
	}
	return n
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}
