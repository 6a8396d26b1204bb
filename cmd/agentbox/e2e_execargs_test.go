package main_test

import (
	"strings"
	"testing"

	"github.com/agentbox/agentbox/internal/testutil"
)

// exec -- CMD ARG... runs exactly that argv; one argument is a script.
func TestExecArgv(t *testing.T) {
	testutil.RequireDocker(t)
	ws := t.TempDir()
	r := agentbox(t, nil, "exec", "--workspace", ws, "--", "printf", "%s|", "a    b", "$HOME", "it's", `x"y`, "")
	if r.code != 0 || r.stdout != `a    b|$HOME|it's|x"y||` {
		t.Errorf("argv: %d %q %q", r.code, r.stdout, r.stderr)
	}
	r = agentbox(t, nil, "exec", "--workspace", ws, "--", "echo a; echo b | tr b c")
	if r.code != 0 || r.stdout != "a\nc\n" {
		t.Errorf("script: %d %q %q", r.code, r.stdout, r.stderr)
	}
	// Flags after the command's argv belong to the command after --.
	r = agentbox(t, nil, "exec", "--workspace", ws, "--", "ls", "--json-not-a-flag-of-agentbox")
	if !strings.Contains(r.stderr, "unrecognized option") || strings.Contains(r.stderr, "unknown flag") {
		t.Errorf("a flag after -- is the command's: %d %q", r.code, r.stderr)
	}
}
