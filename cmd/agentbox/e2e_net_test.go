package main_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestPolicyExplainConnectCLI(t *testing.T) {
	dir := abCmd{dir: t.TempDir()}
	pol := filepath.Join(dir.dir, "net.yaml")
	if err := os.WriteFile(pol, []byte("version: 1\nextends: none\nsandbox: {network: proxy}\nnetwork:\n  allow: [\"pypi.org\", \"10.0.0.5:8080\"]\n  deny: [\"*.internal.example.com\"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for target, want := range map[string]string{
		"pypi.org:443":             `allow: pypi.org:443 allowed by network.allow[0] "pypi.org"`,
		"example.com:443":          "deny: example.com:443 refused: not in network.allow",
		"a.internal.example.com:1": `deny: a.internal.example.com:1 refused: matched network.deny[0] "*.internal.example.com"`,
		"0x7f.1:80":                `deny: "0x7f.1:80" refused: bad or ambiguous target`,
	} {
		r := dir.run(t, "policy", "explain", "--policy", pol, "--connect", target)
		if r.code != 0 || !strings.HasPrefix(r.stdout, want) {
			t.Errorf("%s: %d %q %q; want prefix %q", target, r.code, r.stdout, r.stderr, want)
		}
	}
	r := dir.run(t, "policy", "explain", "--policy", pol, "--connect", "10.0.0.5:8080", "--json")
	var d struct{ Decision, Rule, Reason string }
	if err := json.Unmarshal([]byte(r.stdout), &d); err != nil || d.Decision != "allow" || d.Rule != "network.allow[1]" {
		t.Errorf("json: %q %v", r.stdout, err)
	}
	if r := dir.run(t, "policy", "explain", "--connect", "pypi.org:443", "ls"); r.code != 2 {
		t.Errorf("--connect with a command: exit %d, want 2", r.code)
	}
	broken := filepath.Join(dir.dir, "broken.yaml")
	os.WriteFile(broken, []byte("version: 1\nnetwork:\n  allow: [\"https://pypi.org/simple\"]\n"), 0o600)
	if r := dir.run(t, "policy", "check", broken); r.code != 2 || !strings.Contains(r.stderr, "broken.yaml:3:11: network.allow[0]") {
		t.Errorf("check: %d %q", r.code, r.stderr)
	}
}
