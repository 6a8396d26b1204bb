package policy

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

func cmdProbe(s, src string) Probe {
	return Probe{Action: Action{Kind: Command, Command: s}, Source: src, Ran: true}
}

// suggestFrom suggests on the default from the probes and loads the
// result with the strict loader.
func suggestFrom(t testing.TB, probes []Probe) (*Suggestion, *Policy, string) {
	t.Helper()
	s := Suggest(Default(), probes)
	var b bytes.Buffer
	if err := s.WriteYAML(&b, []string{"learn.jsonl"}); err != nil {
		t.Fatal(err)
	}
	p, err := Parse("suggested.yaml", b.Bytes())
	if err != nil {
		t.Fatalf("the suggestion does not load: %v\n%s", err, b.String())
	}
	return s, p, b.String()
}

func TestSuggestLeastPolicy(t *testing.T) {
	var probes []Probe
	for i, c := range []string{"git status", "git diff --stat", "python3 solve.py --n 3", "python3 solve.py --n 5",
		"pytest tests/test_a.py", "pytest tests/test_b.py -q", "mkdir -p out && echo hi > out/a.txt", "cat README.md",
		"sudo rm x", "git push origin main", "ls"} {
		probes = append(probes, cmdProbe(c, fmt.Sprintf("learn.jsonl:%d", i+1)))
	}
	probes = append(probes,
		Probe{Action: Action{Kind: Read, Path: "src/a.py"}, Source: "learn.jsonl:20", Ran: true},
		Probe{Action: Action{Kind: Read, Path: "src/b.py"}, Source: "learn.jsonl:21", Ran: true},
		Probe{Action: Action{Kind: Write, Path: "src/a.py"}, Source: "learn.jsonl:22", Ran: true},
		Probe{Action: Action{Kind: Write, Path: ".git/config"}, Source: "learn.jsonl:23", Ran: true},
		Probe{Connect: "pypi.org:443", Source: "learn.jsonl:24", Ran: true})
	s, p, text := suggestFrom(t, probes)
	for _, want := range []string{"- git status  # learn.jsonl:1", "- \"python3 solve.py --n *\"  # learn.jsonl:3, learn.jsonl:4",
		"- \"pytest tests/test_*.py\"  # learn.jsonl:5, learn.jsonl:6", "- \"src/*.py\"  # learn.jsonl:20, learn.jsonl:21",
		"- git push  # learn.jsonl:10", "Needs your decision", "connect pypi.org:443: deny by sandbox.network"} {
		if !strings.Contains(text, want) {
			t.Errorf("suggestion lacks %q:\n%s", want, text)
		}
	}
	// What the runs did and the base allows is allowed; the rest is not.
	for _, c := range []string{"git status", "git diff --stat", "python3 solve.py --n 7", "pytest tests/test_c.py",
		"mkdir -p out && echo hi > out/a.txt", "cat README.md", "ls -la"} {
		if d := p.Decide(Action{Kind: Command, Command: c}); d.Verdict != Allow {
			t.Errorf("%q: %s (%s)", c, d.Verdict, d.Reason)
		}
	}
	for _, c := range []string{"sudo rm x", "curl https://evil.example", "rm -rf ~", "git log", "python3 other.py", "echo x > /etc/passwd", "echo x > /tmp/x"} {
		if d := p.Decide(Action{Kind: Command, Command: c}); d.Verdict == Allow {
			t.Errorf("%q allowed by the suggestion (%s)", c, d.Reason)
		}
	}
	if d := p.Decide(Action{Kind: Command, Command: "git push origin main"}); d.Verdict != Ask {
		t.Errorf("git push: %s, want ask as in the base", d.Verdict)
	}
	for _, w := range []string{".git/config", "/etc/x", "/tmp/x", "other.txt"} {
		if d := p.Decide(Action{Kind: Write, Path: w}); d.Verdict != Deny {
			t.Errorf("write %s: %s", w, d.Verdict)
		}
	}
	if v, _ := p.connectVerdict("evil.example:443", ""); v != Deny {
		t.Error("an unlisted host is not denied")
	}
	if v, _ := p.connectVerdict("pypi.org:443", ""); v != Deny {
		t.Error("pypi.org:443 is allowed, where the base (network: none) denies it")
	}
	var sudo, gitcfg bool
	for _, u := range s.Decision {
		sudo = sudo || strings.Contains(u.What, "sudo") && u.Verdict == Deny
		gitcfg = gitcfg || strings.Contains(u.What, ".git/config") && u.Verdict == Deny
	}
	if !sudo || !gitcfg {
		t.Errorf("needs-decision list: %+v", s.Decision)
	}
	// Only things the default allows were allowed: the suggestion is within
	// it.
	if r := Within(p, Default(), probes); !r.Holds() {
		t.Errorf("the suggestion is not within its base: %+v", r)
	}
}

// A call that was refused (by the policy or a person) teaches nothing:
// none of its commands, files or hosts is allowed, not even the parts the
// base allows (the id of a refused sudo id); a call that ran is learned.
func TestSuggestLearnsOnlyWhatRan(t *testing.T) {
	refused := []string{"cat .env", "chmod +x .git/hooks/post-commit", "sudo id", "frobnicate --all", "git push origin main"}
	var probes []Probe
	for i, c := range refused {
		probes = append(probes, Probe{Action: Action{Kind: Command, Command: c}, Source: fmt.Sprintf("l:%d", i+1)})
	}
	probes = append(probes,
		Probe{Action: Action{Kind: Read, Path: "secret.txt"}, Source: "l:10"},
		Probe{Action: Action{Kind: Write, Path: "out/refused.txt"}, Source: "l:11"},
		Probe{Connect: "evil.example:443", Source: "l:12"},
		cmdProbe("wc -l README.md", "l:20"))
	s, p, text := suggestFrom(t, probes)
	for _, c := range append(refused, "id", "cat README.md", "chmod +x run.sh", "frobnicate") {
		if d := p.Decide(Action{Kind: Command, Command: c}); d.Verdict == Allow {
			t.Errorf("%q: allowed by a suggestion learned from refused calls (%s)\n%s", c, d.Reason, text)
		}
	}
	if d := p.Decide(Action{Kind: Command, Command: "wc -l README.md"}); d.Verdict != Allow {
		t.Errorf("the call that ran is not allowed: %s", d.Reason)
	}
	for _, a := range []Action{{Kind: Read, Path: "secret.txt"}, {Kind: Write, Path: "out/refused.txt"}} {
		if d := p.Decide(a); d.Verdict == Allow {
			t.Errorf("%v: allowed from a refused call", a)
		}
	}
	if len(s.Hosts) != 0 || len(s.Decision) != 0 {
		t.Errorf("refused calls reached the suggestion: hosts %v, decisions %v", s.Hosts, s.Decision)
	}
	if r := Within(p, Default(), probes); !r.Holds() {
		t.Errorf("the suggestion is not within its base: %+v", r)
	}
}

// What the base asks about by default (commands no rule names, here under
// the default) ran in a learning run, but allowing it would be looser than
// the base: it needs a person's decision, and the suggestion stays within.
func TestSuggestStaysWithinBase(t *testing.T) {
	s, p, _ := suggestFrom(t, []Probe{cmdProbe("frobnicate --all", "l:1"), cmdProbe("cat /etc/hostname", "l:2"),
		{Action: Action{Kind: Read, Path: "/etc/hostname"}, Source: "l:3", Ran: true}})
	if d := p.Decide(Action{Kind: Command, Command: "frobnicate --all"}); d.Verdict == Allow {
		t.Errorf("frobnicate (asked by the base's commands.default) allowed: %s", d.Reason)
	}
	found := false
	for _, u := range s.Decision {
		found = found || strings.Contains(u.What, "frobnicate") && u.Rule == "commands.default"
	}
	if !found {
		t.Errorf("frobnicate is not listed for a decision: %+v", s.Decision)
	}
	if r := Within(p, Default(), nil); !r.Holds() {
		t.Errorf("the suggestion is not within its base: %+v", r)
	}
}

// Generated trees are one glob each, not one rule per file.
func TestSuggestCollapsesGeneratedTrees(t *testing.T) {
	var probes []Probe
	for i, w := range []string{".git/objects/ab/cdef01", ".git/objects/pack/pack-1.idx", "node_modules/left-pad/index.js",
		"web/node_modules/a/b/c.js", ".venv/lib/python3.12/site-packages/x.py", "env2/pyvenv.cfg", "env2/bin/tool",
		"pkg/__pycache__/m.cpython-312.pyc", "src/main.py"} {
		probes = append(probes, Probe{Action: Action{Kind: Write, Path: w}, Source: fmt.Sprintf("l:%d", i+1), Ran: true})
	}
	s, _, text := suggestFrom(t, probes)
	var got []string
	for _, r := range s.Writes {
		got = append(got, r.Match)
	}
	want := []string{".git/objects/**", ".venv/**", "env2/**", "node_modules/**", "pkg/__pycache__/**", "src/main.py", "web/node_modules/**"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("write globs %v, want %v\n%s", got, want, text)
	}
}

func FuzzSuggest(f *testing.F) {
	for _, s := range []string{"git status\ngit diff", "python3 a.py\npython3 b.py", "ls 'a b'\nls \"c\\\"d\"", "echo x > 'o u t'",
		"cat a.txt b.txt\ncat c.txt", "find . -name '*.py'", "tar xzf x.tar.gz -C out", "rm -rf ~", "x=1; echo $x > f"} {
		f.Add(s)
	}
	base := Default()
	f.Fuzz(func(t *testing.T, script string) {
		if len(script) > 2000 {
			return
		}
		var probes []Probe
		for i, c := range strings.Split(script, "\n") {
			probes = append(probes, cmdProbe(c, fmt.Sprintf("f:%d", i+1)))
		}
		s := Suggest(base, probes)
		var b bytes.Buffer
		if err := s.WriteYAML(&b, []string{"f"}); err != nil {
			t.Fatal(err)
		}
		p, err := Parse("suggested.yaml", b.Bytes())
		if err != nil {
			t.Fatalf("the suggestion does not load: %v\n%s", err, b.String())
		}
		for _, pr := range probes {
			bd := base.Decide(pr.Action)
			if bd.Verdict != Allow {
				continue
			}
			if d := p.Decide(pr.Action); d.Verdict != Allow {
				t.Errorf("%q: base allows, suggestion %s (%s)\n%s", pr.Action.Command, d.Verdict, d.Reason, b.String())
			}
		}
	})
}

// The suggestion states the base's settings, so laying it on the default
// does not bring back what the base set otherwise.
func TestSuggestKeepsBaseSettings(t *testing.T) {
	base := parseT(t, "base.yaml", "version: 1\nsandbox:\n  git_identity: none\n  background: keep\n")
	s := Suggest(base, []Probe{cmdProbe("ls", "l:1")})
	var b bytes.Buffer
	if err := s.WriteYAML(&b, []string{"l"}); err != nil {
		t.Fatal(err)
	}
	p, err := Parse("s.yaml", b.Bytes())
	if err != nil {
		t.Fatalf("%v\n%s", err, b.String())
	}
	if p.Sandbox.GitIdentity != "none" || p.Sandbox.Background != "keep" {
		t.Errorf("settings of the base lost: %+v", p.Sandbox)
	}
	if r := Within(p, base, nil); !r.Holds() {
		t.Errorf("not within its base: %+v", r)
	}
}
