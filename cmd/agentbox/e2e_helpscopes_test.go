package main_test

import (
	"strings"
	"testing"
)

// TestHelpNamesApprovalScopes: --help of run, exec and approvals names
// every answer of the approval prompt with its scope (once, this session,
// always in this workspace, deny for this session).
func TestHelpNamesApprovalScopes(t *testing.T) {
	for _, cmd := range []string{"run", "exec", "approvals"} {
		r := agentbox(t, nil, cmd, "--help")
		help := strings.Join(strings.Fields(r.stdout), " ")
		for _, want := range []string{"once", "s this session", "a always in this workspace", "d deny for this session", "agentbox approvals"} {
			if !strings.Contains(help, want) {
				t.Errorf("%s --help lacks %q:\n%s", cmd, want, r.stdout)
			}
		}
	}
}
