package agent

import (
	"slices"
	"testing"

	"github.com/agentbox/agentbox/policy"
)

// The policy's deny globs reach the sandbox, which protects existing
// matches by mounts (kernel-level file rules).
func TestSandboxConfigCarriesDenyGlobs(t *testing.T) {
	p := policy.Default()
	cfg := SandboxConfig(p, t.TempDir())
	_, read := p.FileRules(false)
	_, write := p.FileRules(true)
	if len(read) == 0 || !slices.Equal(cfg.ReadDeny, read) || !slices.Equal(cfg.WriteDeny, write) {
		t.Fatalf("read deny %v (policy %v), write deny %v (policy %v)", cfg.ReadDeny, read, cfg.WriteDeny, write)
	}
	if cfg.SessionTimeout != p.Sandbox.SessionTimeout {
		t.Errorf("session timeout %v, want %v", cfg.SessionTimeout, p.Sandbox.SessionTimeout)
	}
}
