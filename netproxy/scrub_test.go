package netproxy

import (
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"math/rand"
	"strings"
	"testing"
)

// spellings are the value's transformations an upstream may send back.
func spellings(v string) map[string]string {
	pct := func(upper bool) string {
		var b strings.Builder
		for i := 0; i < len(v); i++ {
			if upper {
				fmt.Fprintf(&b, "%%%02X", v[i])
			} else {
				fmt.Fprintf(&b, "%%%02x", v[i])
			}
		}
		return b.String()
	}
	esc := func(format string) string {
		var b strings.Builder
		for i := 0; i < len(v); i++ {
			fmt.Fprintf(&b, format, v[i])
		}
		return b.String()
	}
	mixed := func() string { // every other byte escaped, each a different way
		var b strings.Builder
		forms := []string{"%%%02x", "\\u%04X", "&#%d;", "\\x%02x", "&#x%x;"}
		for i := 0; i < len(v); i++ {
			if i%2 == 0 {
				b.WriteByte(v[i])
			} else {
				fmt.Fprintf(&b, forms[i%len(forms)], v[i])
			}
		}
		return b.String()
	}
	return map[string]string{
		"plain":         v,
		"upper":         strings.ToUpper(v),
		"percent":       pct(false),
		"PERCENT":       pct(true),
		"json \\u":      esc("\\u%04x"),
		"js \\x":        esc("\\x%02X"),
		"html dec":      esc("&#%d;"),
		"html hex":      esc("&#x%X;"),
		"mixed":         mixed(),
		"hex":           hex.EncodeToString([]byte(v)),
		"HEX":           strings.ToUpper(hex.EncodeToString([]byte(v))),
		"base64":        base64.StdEncoding.EncodeToString([]byte(v)),
		"base64url":     base64.RawURLEncoding.EncodeToString([]byte("a:" + v)),
		"basic":         base64.StdEncoding.EncodeToString([]byte("x:" + v)),
		"json slashes":  strings.ReplaceAll(v, "-", "\\-"),
		"percent+upper": strings.ToUpper(v[:4]) + pct(true)[12:],
	}
}

// TestScrubTransformations: every spelling of the value is masked in a
// stream read in chunks of every size, and the rest of the stream is
// unchanged.
func TestScrubTransformations(t *testing.T) {
	sc := newScrubber([]string{testValue})
	rng := rand.New(rand.NewSource(38))
	for name, sp := range spellings(testValue) {
		for _, chunk := range []int{1, 2, 5, 17, 4096, 1 << 20} {
			pre := strings.Repeat("p", rng.Intn(100000))
			src := pre + "<" + sp + ">tail"
			got, err := io.ReadAll(newScrubReader(&chunked{s: src, n: chunk}, sc))
			if err != nil || len(got) != len(src) {
				t.Fatalf("%s chunk %d: %v, length %d want %d", name, chunk, err, len(got), len(src))
			}
			if string(got[:len(pre)+1]) != pre+"<" || !strings.HasSuffix(string(got), ">tail") {
				t.Errorf("%s chunk %d: bytes around the value changed", name, chunk)
			}
			inner := string(got[len(pre)+1 : len(got)-len(">tail")])
			if strings.Trim(inner, "*") != "" && strings.Count(inner, "*") < len(testValue)/2 {
				t.Errorf("%s chunk %d: %q not masked: %q", name, chunk, sp, inner)
			}
			if sc.String(inner) != inner {
				t.Errorf("%s chunk %d: what is left still matches: %q", name, chunk, inner)
			}
		}
	}
}

// TestScrubLeavesOrdinaryText: escapes and look-alikes that do not spell
// the value pass unchanged.
func TestScrubLeavesOrdinaryText(t *testing.T) {
	sc := newScrubber([]string{testValue})
	for _, s := range []string{
		"100% of &#38; \\u00e9 \\x41 %zz &#; &#x;",
		testValue[:len(testValue)-1] + "X",
		"%" + testValue[1:],
		strings.Repeat("&#", 1000),
	} {
		if got := sc.String(s); got != s {
			t.Errorf("%q changed to %q", s, got)
		}
	}
}

func FuzzScrubSpellings(f *testing.F) {
	f.Add("x", 1, 0)
	f.Add("abc", 7, 3)
	f.Fuzz(func(t *testing.T, around string, chunk, form int) {
		if chunk <= 0 || chunk > 1<<16 {
			chunk = 1
		}
		names := []string{"plain", "upper", "percent", "json \\u", "html hex", "mixed", "hex", "base64"}
		sp := spellings(testValue)[names[(form%len(names)+len(names))%len(names)]]
		src := around + sp + around
		got, err := io.ReadAll(newScrubReader(&chunked{s: src, n: chunk}, newScrubber([]string{testValue})))
		if err != nil || len(got) != len(src) || strings.Contains(string(got), sp) {
			t.Fatalf("%q: %q %v", src, got, err)
		}
	})
}

// TestScrubValueWithEscapeBytes: a value holding what reads as an escape
// (%41, \x41, &#65;) is masked sent verbatim too, not only decoded.
func TestScrubValueWithEscapeBytes(t *testing.T) {
	for _, v := range []string{"pa%41ss-secret", `pa\x41ss-secret`, "pa&#65;ss-secret", "secret-ends%", "%25%25%25%25%25%25%25%25%25%25%25%25"} {
		sc := newScrubber([]string{v})
		for _, around := range []string{"", "41", "x"} {
			in := "<" + v + around + ">"
			if got := sc.String(in); strings.Contains(got, v) {
				t.Errorf("%q: %q left in %q", v, v, got)
			}
		}
	}
}
