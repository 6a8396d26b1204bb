package policy

import (
	"strings"
	"testing"
	"time"
)

// TestHostileInputIsBounded decides pathological scripts: each must be
// denied, quickly, without a crash. (Tests do not assert on time; the
// timing is logged.)
func TestHostileInputIsBounded(t *testing.T) {
	p := fuzzPolicy
	cases := map[string]string{
		"size":        "ls " + strings.Repeat("a", 300<<10),
		"parens":      strings.Repeat("(", 100000) + "ls" + strings.Repeat(")", 100000),
		"arith":       "echo $((" + strings.Repeat("(", 50000) + "1" + strings.Repeat(")", 50000) + "))",
		"subst":       strings.Repeat("$(", 40000) + "ls" + strings.Repeat(")", 40000),
		"braces":      strings.Repeat("{ ", 60000) + "ls" + strings.Repeat("; }", 60000),
		"ifs":         strings.Repeat("if ls; then ", 10000) + "ls" + strings.Repeat("; fi", 10000),
		"commands":    strings.Repeat("ls;", 20000),
		"pipeline":    strings.Repeat("ls | ", 40000) + "rm x",
		"andchain":    strings.Repeat("ls && ", 40000) + "ls",
		"bashc":       strings.Repeat("bash -c '", 1) + strings.Repeat("eval ", 20) + "ls'",
		"nestedbashc": nestBashC(9),
		"params":      "echo " + strings.Repeat("${a:-", 20000) + "x" + strings.Repeat("}", 20000),
		"backquotes":  strings.Repeat("`", 100000),
		"heredocs":    strings.Repeat("cat <<E\n", 5000) + strings.Repeat("x\nE\n", 5000),
		"arithchain":  "echo $((" + strings.Repeat("1+", 100000) + "1))",
		"test":        "[[ " + strings.Repeat("( ", 50000) + "a" + strings.Repeat(" )", 50000) + " ]]",
		"wrappers":    strings.Repeat("env ", 50000) + "ls",
		"xargs":       strings.Repeat("xargs ", 50000) + "ls",
		"cds":         strings.Repeat("cd a; cd b; ", 1000) + "echo > x",
		"hash":        strings.Repeat("ls # c\n", 20000),
	}
	for name, s := range cases {
		start := time.Now()
		d := p.Decide(Action{Kind: Command, Command: s})
		el := time.Since(start)
		t.Logf("%-12s %7d bytes: %s in %v (%s)", name, len(s), d.Verdict, el, d.Rule)
		if name == "andchain" || name == "hash" || name == "cds" || name == "backquotes" || name == "heredocs" {
			continue // long but legitimate: decided on their merits
		}
		if d.Verdict != Deny {
			t.Errorf("%s: %s (%s)", name, d.Verdict, d.Reason)
		}
	}
}

func nestBashC(n int) string {
	s := "ls"
	for i := 0; i < n; i++ {
		s = "bash -c " + shellQuote(s)
	}
	return s
}

func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func TestVisible(t *testing.T) {
	for in, want := range map[string]string{
		"ls -la":       "ls -la",
		"a\nb\tc":      "a\nb\tc",
		"rm\u200b x":   "rm<U+200B> x",
		"ls \u202eexe": "ls <U+202E>exe",
		"ｒｍ":           "<U+FF52><U+FF4D>",
		"r\u043c":      "r<U+043C>",
		"caf\u00e9":    "caf\u00e9",
		"\x1b[2J":      "<U+001B>[2J",
		"a\u00a0b":     "a<U+00A0>b",
		"e\u0301":      "e<U+0301>",
		"bad\xffutf8":  "bad<0xFF>utf8",
		"\ufeffbom":    "<U+FEFF>bom",
		"日本語":          "日本語",
	} {
		if got := Visible(in); got != want {
			t.Errorf("Visible(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestDecisionShape(t *testing.T) {
	p, err := Parse("t.yaml", []byte(`version: 1
commands:
  allow: [ls]
  deny: [sudo, {match: "rm -rf /", why: never wipe the root}]
`))
	if err != nil {
		t.Fatal(err)
	}
	d := p.Decide(Action{Kind: Command, Command: "ls; rm -rf /"})
	if d.Verdict != Deny || d.Rule != "commands.deny[1]" || d.Pattern != "rm -rf /" || d.Why != "never wipe the root" ||
		d.Reason != `rm -rf /: matched commands.deny[1] "rm -rf /" (never wipe the root)` || len(d.Parts) != 2 {
		t.Errorf("%+v", d)
	}
	f := p.Decide(Action{Kind: Write, Path: "/workspace/a/../b"})
	if f.Verdict != Allow || len(f.Parts) != 1 || f.Parts[0].Argv[0] != "/workspace/a/../b" || f.Parts[0].Note != "resolves to b" {
		t.Errorf("%+v", f)
	}
	if v, rule, pat := MatchFile([]string{"**"}, []string{".git/**"}, ".git/config", true); v != Deny || rule != "files.write.deny[0]" || pat != ".git/**" {
		t.Errorf("MatchFile: %v %s %s", v, rule, pat)
	}
	if v, rule, _ := MatchFile([]string{"**"}, nil, "/etc/passwd", false); v != Deny || rule != "files.read.default" {
		t.Errorf("MatchFile abs: %v %s", v, rule)
	}
}
