package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/internal/testutil"
)

// A missing image is one error before any task starts (125); --resume
// with another task file is refused; the summary table is on stdout.
func TestBatchPreflightAndResume(t *testing.T) {
	testutil.RequireDocker(t)
	tasks := batchFixture(t, 2, 2, "true")
	dir := filepath.Dir(tasks)
	pol := filepath.Join(dir, "missing-image.yaml")
	writeFile(t, pol, "version: 1\nextends: none\nsandbox:\n  image: agentbox/no-such-image:never\n", 0o644)
	out := filepath.Join(t.TempDir(), "results")
	log := filepath.Join(t.TempDir(), "audit.jsonl")
	r := agentbox(t, nil, "batch", tasks, "--policy", pol, "--output", out, "--audit", log, "--no-pool")
	if r.code != 125 || !strings.Contains(r.stderr, "agentbox/no-such-image:never") || !strings.Contains(r.stderr, "no task was started") || strings.Contains(r.stderr, "setup_failed") {
		t.Fatalf("missing image: %d %q", r.code, r.stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(out, "results.jsonl")); len(b) > 0 {
		t.Errorf("tasks ran: %s", b)
	}

	out = filepath.Join(t.TempDir(), "results")
	r = agentbox(t, nil, "batch", tasks, "--output", out, "--audit", log, "--no-pool")
	if r.code != 0 || !strings.Contains(r.stdout, "2 tasks: 2 ok") || strings.Contains(r.stderr, "2 tasks: 2 ok") {
		t.Fatalf("batch: %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	b, _ := os.ReadFile(tasks)
	other := filepath.Join(dir, "other.yaml")
	writeFile(t, other, string(b)+"  - {id: extra, task: x, workspace: ws, script: quick.yaml}\n", 0o644)
	r = agentbox(t, nil, "batch", other, "--resume", "--output", out, "--audit", log, "--no-pool")
	if r.code != 2 || !strings.Contains(r.stderr, "another task file") {
		t.Errorf("--resume with another task file: %d %q", r.code, r.stderr)
	}
	r = agentbox(t, nil, "batch", tasks, "--resume", "--output", out, "--audit", log, "--no-pool")
	if r.code != 0 || !strings.Contains(r.stdout, "2 finished earlier") {
		t.Errorf("--resume with the same file: %d %q %q", r.code, r.stdout, r.stderr)
	}
}
