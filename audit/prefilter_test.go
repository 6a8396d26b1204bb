package audit

import (
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
)

func TestMustContain(t *testing.T) {
	for expr, want := range map[string][]string{
		`(?i)(api[_-]?key|token|secret|password)\s*[:=]\s*\S+`: {"api", "token", "secret", "password"},
		`TOKEN_[A-Z]+`:  {"token_"},
		`x+y`:           nil, // too short to be worth it
		`(foo)?barbaz`:  {"barbaz"},
		`(foo|ba)rbaz`:  {"rbaz"},
		`(?i)héllo`:     nil, // folding outside ASCII
		`[a-z]{20}`:     nil,
		`(abc){2,}`:     {"abc"},
		`(abc)*defg|hi`: nil,
	} {
		if got := mustContain(expr); !slices.Equal(got, want) {
			t.Errorf("%s: %q, want %q", expr, got, want)
		}
	}
}

// The only runes outside ASCII that case-fold to an ASCII letter are
// U+017F and U+212A, which foldSafe looks for.
func TestFoldSafeCoversASCIIOrbits(t *testing.T) {
	var odd []rune
	for r := rune('A'); r <= 'z'; r++ {
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			if f >= 0x80 {
				odd = append(odd, f)
			}
		}
	}
	slices.Sort(odd)
	odd = slices.Compact(odd)
	if !slices.Equal(odd, []rune{0x17f, 0x212a}) {
		t.Fatalf("non-ASCII runes folding to ASCII letters: %U", odd)
	}
	for _, s := range []string{"ſecret = abcdef", "\u212aey: x"} {
		if foldSafe(s) {
			t.Errorf("%q counted fold-safe", s)
		}
	}
}

// The prefilter never skips text the pattern matches.
func TestPrefilterNeverMisses(t *testing.T) {
	pats := []string{`(?i)(api[_-]?key|token|secret|password)\s*[:=]\s*\S+`, `TOKEN_[A-Z]+`, `(?i)(abc){2,}x`}
	alphabet := []rune("aAbBcCkKsStToOeEnNpPiIrR_=: -xXſ\u212a")
	rng := rand.New(rand.NewPCG(1, 2))
	words := []string{"token", "TOKEN_", "Secret", "pAsSwOrD", "api-key", "abcABC", "ſecret", "to\u212aen"}
	for _, expr := range pats {
		p := newPrefiltered(regexp.MustCompile(expr))
		for range 20000 {
			var b strings.Builder
			for range rng.IntN(24) {
				if rng.IntN(5) == 0 {
					b.WriteString(words[rng.IntN(len(words))])
				} else {
					b.WriteRune(alphabet[rng.IntN(len(alphabet))])
				}
			}
			s := b.String()
			if p.re.MatchString(s) && p.skip(strings.ToLower(s), foldSafe(s)) {
				t.Fatalf("%s: skipped %q, which matches", expr, s)
			}
		}
	}
}
