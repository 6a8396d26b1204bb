package policy

import (
	"os"
	"regexp"
	"testing"
)

// readme is the repository's README.md.
func readme(t *testing.T) []byte {
	t.Helper()
	data, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestReadmePoliciesLoad: every policy the README shows (its yaml blocks)
// loads, so that a user who copies one gets a working policy.
func TestReadmePoliciesLoad(t *testing.T) {
	data := readme(t)
	blocks := regexp.MustCompile("(?ms)^```yaml\n(.*?)^```$").FindAllSubmatch(data, -1)
	if len(blocks) < 4 {
		t.Fatalf("found %d yaml blocks in README.md, want at least 4", len(blocks))
	}
	for i, b := range blocks {
		if _, err := Parse("README.md", b[1]); err != nil {
			t.Errorf("README yaml block %d does not load:\n%s\n%v", i+1, b[1], err)
		}
	}
}

// TestReadmeRulesMatch: the tool-call lines the README shows name the rule
// of the built-in default that decides that command today.
func TestReadmeRulesMatch(t *testing.T) {
	data := readme(t)
	lines := regexp.MustCompile(`execute_bash  (.+?)\s{2,}(allow|deny|ask) (commands\.\w+\[\d+\])`).FindAllSubmatch(data, -1)
	if len(lines) < 3 {
		t.Fatalf("found %d execute_bash lines with a rule in README.md, want at least 3", len(lines))
	}
	p := Default()
	for _, l := range lines {
		cmd, verdict, rule := string(l[1]), string(l[2]), string(l[3])
		d := p.Decide(Action{Kind: Command, Command: cmd})
		if d.Verdict.String() != verdict || d.Rule != rule {
			t.Errorf("README shows %q as %s %s; the default decides %s %s", cmd, verdict, rule, d.Verdict, d.Rule)
		}
	}
}
