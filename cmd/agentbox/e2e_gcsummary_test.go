package main_test

import (
	"strings"
	"testing"

	"github.com/agentbox/agentbox/internal/testutil"
)

// TestGCOneSummaryLine: gc ends with exactly one summary line, the same
// shape whatever it removed ("gc: nothing to remove" on a clean state).
func TestGCOneSummaryLine(t *testing.T) {
	testutil.RequireDocker(t)
	env := baseEnv(t)
	r := abCmd{fullEnv: env}.run(t, "gc")
	if r.code != 0 || strings.Count(r.stdout, "gc: ") != 1 {
		t.Fatalf("gc: %d, want one summary line:\n%s%s", r.code, r.stdout, r.stderr)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if last := lines[len(lines)-1]; !strings.HasPrefix(last, "gc: ") || strings.Contains(r.stdout, "\nnothing to remove") {
		t.Errorf("gc's last line is not its summary: %q", r.stdout)
	}
}
