package audit

import (
	"bufio"
	"math/rand/v2"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

var corpusClasses = map[string]string{
	"U": "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567",
	"A": "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789",
	"a": "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
	"l": "abcdefghijklmnopqrstuvwxyz",
	"h": "0123456789abcdef",
	"b": "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/",
	"d": "0123456789",
	"w": "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-",
}

var corpusTemplate = regexp.MustCompile(`\{([UAalhbdw]):(\d+)\}`)

// expand fills a corpus line's templates with random characters (so the
// repository holds no token) and returns the values put in.
func expand(r *rand.Rand, line string) (string, []string) {
	var vals []string
	out := corpusTemplate.ReplaceAllStringFunc(line, func(m string) string {
		g := corpusTemplate.FindStringSubmatch(m)
		n, _ := strconv.Atoi(g[2])
		cls := corpusClasses[g[1]]
		b := make([]byte, n)
		for i := range b {
			b[i] = cls[r.IntN(len(cls))]
		}
		vals = append(vals, string(b))
		return string(b)
	})
	return strings.ReplaceAll(out, `\n`, "\n"), vals
}

func corpusLines(t *testing.T, name string) []string {
	t.Helper()
	f, err := os.Open("testdata/secrets/" + name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if l := sc.Text(); l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return out
}

// TestSecretCorpus: every positive is redacted with its detector's
// fingerprint, nothing of the secret left; every look-alike negative
// passes unchanged. Each positive runs with 20 random fillings.
func TestSecretCorpus(t *testing.T) {
	red := Redactor(Options{})
	r := rand.New(rand.NewPCG(27, 1))
	for _, l := range corpusLines(t, "positives.txt") {
		name, text, _ := strings.Cut(l, "\t")
		for range 20 {
			in, vals := expand(r, text)
			out := red(in)
			if !strings.Contains(out, "[REDACTED:"+name+":sha256:") {
				t.Errorf("%s: no %s marker: %q -> %q", name, name, in, out)
			}
			for _, v := range vals {
				if len(v) >= 6 && strings.Contains(out, v) {
					t.Errorf("%s: %q left in %q", name, v, out)
					break
				}
			}
		}
	}
	for _, l := range corpusLines(t, "negatives.txt") {
		in := strings.ReplaceAll(l, `\n`, "\n")
		if out := red(in); out != in {
			t.Errorf("look-alike changed: %q -> %q", in, out)
		}
	}
}

// The fingerprint is stable for one secret and differs between secrets:
// a reviewer can match occurrences.
func TestFingerprintMatchesOccurrences(t *testing.T) {
	red := Redactor(Options{})
	a, b := "ghp_"+rep("a1B2", 9), "ghp_"+rep("c3D4", 9)
	out := red("first " + a + " then " + b + " again " + a)
	marks := regexp.MustCompile(`\[REDACTED:github-token:sha256:[0-9a-f]{8}\]`).FindAllString(out, -1)
	if len(marks) != 3 || marks[0] != marks[2] || marks[0] == marks[1] {
		t.Fatalf("%q", out)
	}
}
