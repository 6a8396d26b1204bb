package main_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/internal/testutil"
)

// TestBatchInfraStoppedExits125: when every sandbox start fails for the
// infrastructure (here: an executor that is not a static binary, which no
// image can run) and it does not come back within the breaker's pause, the
// batch stops starting tasks and exits 125 (sandbox unavailable), not 130
// (interrupted), with the line that says to --resume.
func TestBatchInfraStoppedExits125(t *testing.T) {
	testutil.RequireDocker(t)
	tasks := batchFixture(t, 6, 6, "true")
	out := filepath.Join(t.TempDir(), "results")
	r := agentbox(t, []string{"AGENTBOX_EXECUTOR=/bin/sh", "AGENTBOX_TEST_BATCH_INFRA_PAUSE=1s"},
		"batch", tasks, "-j", "3", "--no-pool", "--output", out, "--audit", filepath.Join(t.TempDir(), "audit.jsonl"))
	if r.code != 125 {
		t.Fatalf("exit %d, want 125\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"sandbox infrastructure failing", "--resume", "not_started"} {
		if !strings.Contains(r.stdout+r.stderr, want) {
			t.Errorf("output lacks %q\nstdout:\n%s\nstderr:\n%s", want, r.stdout, r.stderr)
		}
	}
}
