package main_test

import (
	"path/filepath"
	"strings"
	"testing"
)

// A YAML syntax error in a policy carries its column like every other
// policy error.
func TestPolicyYAMLErrorColumn(t *testing.T) {
	p := writeFile(t, filepath.Join(t.TempDir(), "p.yaml"), "version: 1\ncommands:\n\tdefault: ask\n", 0o644)
	r := agentbox(t, nil, "policy", "check", p)
	if r.code != 2 || !strings.Contains(r.stderr, "p.yaml:3:1: invalid YAML") {
		t.Errorf("tab at line 3: %d %q", r.code, r.stderr)
	}
}
