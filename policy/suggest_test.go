package policy

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

func cmdProbe(s, src string) Probe {
	return Probe{Action: Action{Kind: Command, Command: s}, Source: src}
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
		Probe{Action: Action{Kind: Read, Path: "src/a.py"}, Source: "learn.jsonl:20"},
		Probe{Action: Action{Kind: Read, Path: "src/b.py"}, Source: "learn.jsonl:21"},
		Probe{Action: Action{Kind: Write, Path: "src/a.py"}, Source: "learn.jsonl:22"},
		Probe{Action: Action{Kind: Write, Path: ".git/config"}, Source: "learn.jsonl:23"},
		Probe{Connect: "pypi.org:443", Source: "learn.jsonl:24"})
	s, p, text := suggestFrom(t, probes)
	for _, want := range []string{"- git status  # learn.jsonl:1", "- \"python3 solve.py --n *\"  # learn.jsonl:3, learn.jsonl:4",
		"- \"pytest tests/test_*.py\"  # learn.jsonl:5, learn.jsonl:6", "- \"src/*.py\"  # learn.jsonl:20, learn.jsonl:21",
		"- pypi.org:443  # learn.jsonl:24", "- git push  # learn.jsonl:10", "Needs your decision"} {
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
	if v, _ := p.connectVerdict("pypi.org:443", ""); v != Allow {
		t.Error("pypi.org:443 is not allowed")
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
	// it (network proxy aside, which the runs used).
	r := Within(p, Default(), nil)
	for _, f := range r.Looser {
		if !strings.HasPrefix(f.Field, "sandbox.network") && f.Field != "network" {
			t.Errorf("looser than the default: %s", f)
		}
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
