package policy

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/bmatcuk/doublestar/v4"
)

var nfaGlobs = []string{"**", "a/**", "**/x", "*/**/.git", "*/**/.git/**", "a/**/b", ".git/hooks/**", "**/*.pem",
	"*.code-workspace", "src/*.go", "**/.env.*", "/tmp/**", "{a,b}/*.go", "a**b", "x/*", ".git", "/etc/passwd"}

var nfaPaths = []string{"a", "a/b", "a/b/c", "x", "b/x", "a/x/b", ".git", "x/.git", "x/y/.git", "x/.git/config",
	".git/hooks", ".git/hooks/pre-commit", "k.pem", "d/e/k.pem", "p.code-workspace", "src/a.go", "src/a/b.go",
	"abc", "a/c", ".env.local", "d/.env.x", "/tmp", "/tmp/x/y", "b/m.go", "axxb", "ax/xb", "x/y", "/etc/passwd", "etc/passwd"}

// The glob automata agree with MatchFile's doublestar matching on clean
// paths, relative and absolute kept apart.
func TestNFAGlobsAgreeWithDoublestar(t *testing.T) {
	for _, g := range nfaGlobs {
		n := &nfa{}
		if err := n.addGlob(g); err != nil {
			t.Fatal(g, err)
		}
		for _, p := range nfaPaths {
			want := strings.HasPrefix(g, "/") == strings.HasPrefix(p, "/") && doublestar.MatchUnvalidated(g, p)
			if got := n.matches(pathKey(p)); got != want {
				t.Errorf("glob %q path %q: automaton %v, doublestar %v", g, p, got, want)
			}
		}
	}
}

// The rule automata agree with rule.matches on static argv.
func TestNFARulesAgreeWithMatcher(t *testing.T) {
	rules := []string{"rm", "git push", "rm -rf /", "rm * /", "dd * of=/dev/*", "bash *.sh", "mkfs.*", "*", "git * --force"}
	argvs := [][]string{{"rm"}, {"/bin/rm", "x"}, {"rm/"}, {"x/rm/", "-rf", "/"}, {"git", "push"}, {"git", "pushx"},
		{"git", "push", "-f"}, {"rm", "-rf", "/"}, {"rm", "-r", "/"}, {"rm", "-rf", "/x"}, {"dd", "if=a", "of=/dev/sda"},
		{"bash", "a.sh"}, {"bash", "a/b.sh", "x"}, {"mkfs.ext4"}, {"/sbin/mkfs.ext4", "/dev/x"}, {"git", "a", "--force"}, {"ls"}}
	for _, rs := range rules {
		words, err := parseRuleWords(rs)
		if err != nil {
			t.Fatal(err)
		}
		r := &rule{match: rs, words: words}
		n := &nfa{}
		n.addRule(words)
		for _, argv := range argvs {
			cl := staticLine(argv)
			want := r.matches(cl, false)
			if got := n.matches(strings.Join(argv, "\x00")); got != want {
				t.Errorf("rule %q argv %q: automaton %v, matcher %v", rs, argv, got, want)
			}
		}
	}
}

func staticLine(argv []string) *cmdline {
	cl := &cmdline{}
	for _, a := range argv {
		cl.words = append(cl.words, staticWord(a))
	}
	return cl
}

func TestFindString(t *testing.T) {
	mk := func(globs ...string) *nfa {
		n := &nfa{}
		for _, g := range globs {
			if err := n.addGlob(g); err != nil {
				t.Fatal(err)
			}
		}
		return n
	}
	// .git/hooks/** is not inside src/**: a witness exists.
	w, ok, complete := findString([]*nfa{mk(".git/hooks/**")}, mk("src/**"))
	if !ok || !complete || !doublestar.MatchUnvalidated(".git/hooks/**", w[1:]) {
		t.Fatalf("witness %q %v %v", w, ok, complete)
	}
	// src/*.go is inside src/**: none.
	if w, ok, complete := findString([]*nfa{mk("src/*.go")}, mk("src/**")); ok || !complete {
		t.Fatalf("src/*.go outside src/**: %q", w)
	}
	// ** and .git/hooks/** intersect.
	if _, ok, _ := findString([]*nfa{mk("**"), mk(".git/hooks/**")}, nil); !ok {
		t.Fatal("no intersection of ** and .git/hooks/**")
	}
	// relative and absolute never meet
	if _, ok, _ := findString([]*nfa{mk("**"), mk("/tmp/**")}, nil); ok {
		t.Fatal("** met /tmp/**")
	}
}

// FuzzNFAGlob: the glob automaton accepts exactly the clean paths
// doublestar matches (the proof's soundness rests on it).
func FuzzNFAGlob(f *testing.F) {
	for _, g := range nfaGlobs {
		for _, p := range nfaPaths[:6] {
			f.Add(g, p)
		}
	}
	f.Fuzz(func(t *testing.T, g, p string) {
		if len(g) > 40 || len(p) > 40 || !doublestar.ValidatePattern(g) || !utf8.ValidString(g) || !utf8.ValidString(p) {
			return
		}
		if c, err := cleanGlob(g); err != nil || c != g {
			return
		}
		if p == "" || strings.Contains(p, "//") || strings.HasSuffix(p, "/") && p != "/" || strings.ContainsRune(p, 0) {
			return
		}
		for _, seg := range strings.Split(strings.TrimPrefix(p, "/"), "/") {
			if seg == "." || seg == ".." {
				return
			}
		}
		n := &nfa{}
		if err := n.addGlob(g); err != nil {
			return
		}
		want := strings.HasPrefix(g, "/") == strings.HasPrefix(p, "/") && doublestar.MatchUnvalidated(g, p)
		if got := n.matches(pathKey(p)); got != want {
			t.Fatalf("glob %q path %q: automaton %v, doublestar %v", g, p, got, want)
		}
	})
}

// FuzzNFARule: the rule automaton accepts exactly the static argvs the
// rule matches.
func FuzzNFARule(f *testing.F) {
	f.Add("rm * /", "x/rm\x00-rf\x00/")
	f.Add("mkfs.*", "/sbin/mkfs.ext4")
	f.Add("git push", "git\x00push\x00-f")
	f.Fuzz(func(t *testing.T, rs, argvs string) {
		words, err := parseRuleWords(rs)
		if err != nil || len(words) == 0 || len(rs) > 30 || len(argvs) > 40 || argvs == "" || strings.IndexByte(rs, 0) >= 0 {
			return
		}
		argv := strings.Split(argvs, "\x00")
		if argv[0] == "" {
			return
		}
		r := &rule{match: rs, words: words}
		n := &nfa{}
		n.addRule(words)
		if got, want := n.matches(argvs), r.matches(staticLine(argv), false); got != want {
			t.Fatalf("rule %q argv %q: automaton %v, matcher %v", rs, argv, got, want)
		}
	})
}
