package policy

import (
	"strings"
	"testing"
)

var fuzzPolicy = mustParse(`version: 1
commands:
  default: ask
  dynamic: ask
  allow: [ls, echo, cat, env, xargs, find, bash, sh, eval, timeout, nice]
  deny: [rm]
`)

func mustParse(s string) *Policy {
	p, err := Parse("fuzz.yaml", []byte(s))
	if err != nil {
		panic(err)
	}
	return p
}

// FuzzDecide checks that the analyser never panics, that a script's
// decision is the most restrictive of its parts, and that adding a denied
// command to a script in any list position always denies it.
func FuzzDecide(f *testing.F) {
	for _, s := range []string{
		"ls", "ls | grep x", "echo $(rm x)", "bash -c 'ls'", "f(){ ls; }", "cat <<EOF\n$(ls)\nEOF",
		"for i in 1; do echo; done", "((x++))", "env -i A=1 ls", "find . -exec ls {} +", "xargs -I{} ls {}",
		"echo ${a[$i]}", "case x in a) ls;; esac", "[[ $x -eq 1 ]]", "eval 'ls'", "ls > out", "cd x && ls > y",
		"coproc ls", "time ls", "declare -n r=x", "a=(1 2)", "echo $'\\x41'", "ls 2>&1 >/dev/null",
		"a['$(rm x)']=1", "read 'a[$(ls)]'", "declare -i x; x=y", "set -k", "bash /dev/stdin <<< ls",
		"env -C d sh -c 'ls > f'", "git -C d log --output=f", "sort -o f x", "find . -delete", "cat /proc/self/cwd/f",
		"declare -n r; r=PATH; r=/x", "declare -n r=x; declare -n x; r=IFS", "local -gn r=LD_PRELOAD", ": ${PATH:=x}",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d := fuzzPolicy.Decide(Action{Kind: Command, Command: s})
		if len(d.Parts) == 0 {
			t.Fatalf("no parts for %q", s)
		}
		max := Allow
		for _, p := range d.Parts {
			if p.Verdict > max {
				max = p.Verdict
			}
		}
		if d.Verdict != max || strings.Contains(d.Reason, "\n") {
			t.Fatalf("%q: verdict %v, parts max %v, reason %q", s, d.Verdict, max, d.Reason)
		}
		if len(s) > 4096 || d.Rule == "always.empty" {
			return
		}
		for _, sep := range []string{"\n", ";", " && ", " || ", " | ", " & "} {
			script := "rm x" + sep + s
			if got := fuzzPolicy.Decide(Action{Kind: Command, Command: script}); got.Verdict != Deny {
				t.Fatalf("%q: %v (%s)", script, got.Verdict, got.Reason)
			}
		}
		for _, p := range d.Parts {
			if p.Rule == "always.parse" {
				return // s alone is not a script; wrapping it changes how it parses
			}
		}
		if strings.HasSuffix(s, "\\") {
			return // a trailing backslash joins the next line in the combinations below
		}
		// A || B and A && B are at least as restrictive as A and B.
		a := fuzzPolicy.Decide(Action{Kind: Command, Command: s}).Verdict
		for _, script := range []string{"ls && " + s, "( " + s + "\n)", "echo $(" + s + "\n)"} {
			got := fuzzPolicy.Decide(Action{Kind: Command, Command: script})
			if got.Verdict < a && got.Rule != "always.parse" {
				t.Fatalf("%q decided %v, less than %q alone (%v): %s", script, got.Verdict, s, a, got.Reason)
			}
		}
	})
}
