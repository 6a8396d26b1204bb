package policy

import (
	"fmt"
	"strings"
	"testing"
)

var (
	fuzzWords = []string{"git", "push", "status", "rm", "-rf", "/", "ls", "x", "*", "a*", "*.sh", "bash", "-D", "branch"}
	fuzzGlobs = []string{"**", "src/**", "*.py", "src/*.py", ".git/**", "**/.env", "/tmp/**", ".git", "*/**/.git"}
	fuzzPaths = []string{"src/a.py", "a.py", ".git/config", "x/.env", ".env", "/tmp/x", "src/x/y.py", ".git", "x/.git", "b"}
)

// smallPolicySource builds a small policy from bytes: verdicts, rules of
// one to three words and file globs from a fixed vocabulary.
func smallPolicySource(b []byte) string {
	next := func() int {
		if len(b) == 0 {
			return 0
		}
		x := int(b[0])
		b = b[1:]
		return x
	}
	verdicts := []string{"allow", "ask", "deny"}
	var s strings.Builder
	fmt.Fprintf(&s, "version: 1\ncommands:\n  default: %s\n  dynamic: deny\n", verdicts[next()%3])
	for _, list := range verdicts {
		fmt.Fprintf(&s, "  %s: [", list)
		for i, n := 0, next()%4; i < n; i++ {
			var ws []string
			for j, m := 0, 1+next()%3; j < m; j++ {
				ws = append(ws, fuzzWords[next()%len(fuzzWords)])
			}
			fmt.Fprintf(&s, "%q, ", strings.Join(ws, " "))
		}
		s.WriteString("]\n")
	}
	s.WriteString("files:\n")
	for _, list := range []string{"read", "write"} {
		fmt.Fprintf(&s, "  %s:\n", list)
		for _, k := range []string{"allow", "deny"} {
			fmt.Fprintf(&s, "    %s: [", k)
			for i, n := 0, next()%3; i < n; i++ {
				fmt.Fprintf(&s, "%q, ", fuzzGlobs[next()%len(fuzzGlobs)])
			}
			s.WriteString("]\n")
		}
	}
	return s.String()
}

func smallPolicy(t *testing.T, b []byte) *Policy {
	p, err := Parse("fuzz.yaml", []byte(smallPolicySource(b)))
	if err != nil {
		t.Skip(err)
	}
	return p
}

func smallPolicyOK(b []byte) *Policy {
	p, err := Parse("fuzz.yaml", []byte(smallPolicySource(b)))
	if err != nil {
		return nil
	}
	return p
}

// FuzzWithinSound: whenever Within says NEW stays within BOUNDARY, no
// action drawn from the vocabulary is decided less restrictively by NEW.
func FuzzWithinSound(f *testing.F) {
	f.Add([]byte{1, 2, 0, 1, 3, 1, 0, 1, 2}, []byte{1, 1, 0, 2, 1, 3, 0})
	f.Add([]byte{2, 1, 1, 7, 2, 0, 11, 1}, []byte{1, 1, 1, 7, 1, 2, 0, 1})
	f.Fuzz(func(t *testing.T, nb, bb []byte) {
		n, b := smallPolicy(t, nb), smallPolicy(t, bb)
		r := Within(n, b, nil)
		if !r.Holds() {
			return
		}
		check := func(a Action) {
			if nd, bd := n.Decide(a), b.Decide(a); nd.Verdict < bd.Verdict {
				t.Fatalf("Within holds, but %v is %s under NEW (%s) and %s under BOUNDARY (%s)", a, nd.Verdict, nd.Reason, bd.Verdict, bd.Reason)
			}
		}
		for _, w1 := range fuzzWords {
			check(Action{Kind: Command, Command: quoteArgv([]string{w1})})
			for _, w2 := range fuzzWords {
				check(Action{Kind: Command, Command: quoteArgv([]string{w1, w2})})
				check(Action{Kind: Command, Command: quoteArgv([]string{w1, w2, "x"})})
			}
		}
		for _, p := range fuzzPaths {
			check(Action{Kind: Read, Path: p})
			check(Action{Kind: Write, Path: p})
		}
	})
}

// TestWithinSoundRandom runs the soundness check on pairs where NEW is
// BOUNDARY made stricter (commands.default deny) with one byte changed,
// so that many pairs hold and the claim is exercised.
func TestWithinSoundRandom(t *testing.T) {
	rng := uint32(7)
	rnd := func() byte { rng = rng*1664525 + 1013904223; return byte(rng >> 24) }
	held := 0
	for i := 0; i < 60; i++ {
		bb := make([]byte, 24)
		for j := range bb {
			bb[j] = rnd()
		}
		nb := append([]byte(nil), bb...)
		nb[0] = 2
		nb[1+int(rnd())%(len(nb)-1)] = rnd()
		n, b := smallPolicyOK(bb), smallPolicyOK(nb)
		if n == nil || b == nil {
			continue
		}
		n, b = b, n // NEW is the stricter one
		if Within(n, b, nil).Holds() {
			held++
			for _, w1 := range fuzzWords {
				for _, w2 := range append(fuzzWords, "") {
					a := Action{Kind: Command, Command: strings.TrimSpace(quoteArgv([]string{w1, w2}))}
					if nd, bd := n.Decide(a), b.Decide(a); nd.Verdict < bd.Verdict {
						t.Fatalf("Within holds, but %q is %s under NEW and %s under BOUNDARY", a.Command, nd.Verdict, bd.Verdict)
					}
				}
			}
			for _, p := range fuzzPaths {
				for _, k := range []Kind{Read, Write} {
					a := Action{Kind: k, Path: p}
					if nd, bd := n.Decide(a), b.Decide(a); nd.Verdict < bd.Verdict {
						t.Fatalf("Within holds, but %v is %s under NEW and %s under BOUNDARY", a, nd.Verdict, bd.Verdict)
					}
				}
			}
		}
	}
	if held < 5 {
		t.Errorf("only %d pairs held: the check exercised too little", held)
	}
	t.Logf("%d of 60 pairs held, all sound", held)
}
