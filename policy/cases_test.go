package policy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// caseFile is the format of testdata/corpus/cases.yaml (the public
// corpus) and testdata/cases.yaml.
type caseFile struct {
	Policy string     `yaml:"policy"`
	Cases  []testCase `yaml:"cases"`
}

type testCase struct {
	Command *string `yaml:"command"`
	Read    *string `yaml:"read"`
	Write   *string `yaml:"write"`
	Want    string  `yaml:"want"`
	Rule    string  `yaml:"rule"` // optional: the deciding rule
	Line    int     `yaml:"-"`
}

func (c testCase) action() (Action, string) {
	switch {
	case c.Command != nil:
		return Action{Kind: Command, Command: *c.Command}, "command " + *c.Command
	case c.Read != nil:
		return Action{Kind: Read, Path: *c.Read}, "read " + *c.Read
	case c.Write != nil:
		return Action{Kind: Write, Path: *c.Write}, "write " + *c.Write
	}
	return Action{Kind: -1}, "?"
}

// corpusDir is the repository's copy of the public corpus (see
// TestCorpusCopyIsCurrent), or $AGENTBOX_CORPUS.
func corpusDir(t *testing.T) string {
	t.Helper()
	if d := os.Getenv("AGENTBOX_CORPUS"); d != "" {
		return d
	}
	return filepath.Join("testdata", "corpus")
}

func runCaseFile(t *testing.T, path string) int {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read cases: %v", err)
	}
	var cf caseFile
	if err := yaml.Unmarshal(data, &cf); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var node yaml.Node
	_ = yaml.Unmarshal(data, &node)
	lines := caseLines(&node)
	p, err := Load(filepath.Join(filepath.Dir(path), cf.Policy))
	if err != nil {
		t.Fatalf("load policy of %s:\n%v", path, err)
	}
	if len(cf.Cases) == 0 {
		t.Fatalf("%s: no cases", path)
	}
	for i, c := range cf.Cases {
		a, name := c.action()
		line := 0
		if i < len(lines) {
			line = lines[i]
		}
		if a.Kind < 0 {
			t.Errorf("%s:%d: case has none of command, read, write", path, line)
			continue
		}
		d := p.Decide(a)
		if d.Verdict.String() != c.Want {
			t.Errorf("%s:%d: %s: got %s, want %s\n  reason: %s", path, line, oneLine(name), d.Verdict, c.Want, d.Reason)
			continue
		}
		if c.Rule != "" && d.Rule != c.Rule {
			t.Errorf("%s:%d: %s: decided by %s, want %s\n  reason: %s", path, line, oneLine(name), d.Rule, c.Rule, d.Reason)
		}
	}
	return len(cf.Cases)
}

func caseLines(doc *yaml.Node) []int {
	if len(doc.Content) == 0 {
		return nil
	}
	m := doc.Content[0]
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == "cases" {
			var out []int
			for _, c := range m.Content[i+1].Content {
				out = append(out, c.Line)
			}
			return out
		}
	}
	return nil
}

func TestPublicCorpus(t *testing.T) {
	n := runCaseFile(t, filepath.Join(corpusDir(t), "cases.yaml"))
	t.Logf("%d public cases", n)
}

func TestOwnCases(t *testing.T) {
	n := runCaseFile(t, filepath.Join("testdata", "cases.yaml"))
	t.Logf("%d own cases", n)
}

func TestCorpusPolicyAllVerdicts(t *testing.T) {
	// Guard against a test helper that passes vacuously.
	p, err := Load(filepath.Join(corpusDir(t), "policy.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for cmd, want := range map[string]Verdict{"ls": Allow, "git push": Ask, "rm x": Deny} {
		if got := p.Decide(Action{Kind: Command, Command: cmd}).Verdict; got != want {
			t.Errorf("%s: got %s want %s", cmd, got, want)
		}
	}
	_ = strings.TrimSpace
}
