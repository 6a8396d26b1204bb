package main_test

import (
	"strings"
	"testing"

	"github.com/agentbox/agentbox/internal/testutil"
)

// TestPreviewShowsTail: the short preview of a command's output on the
// terminal is its tail, where a failing test run says what failed; a
// short output is shown whole.
func TestPreviewShowsTail(t *testing.T) {
	testutil.RequireDocker(t)
	r, _ := dailyRun(t, `turns:
  - tool_calls:
      - {name: execute_bash, args: {command: "seq 1 20; echo 'FAILED: 2 of 20 tests'; exit 1"}}
  - tool_calls:
      - {name: execute_bash, args: {command: "echo one; echo two"}}
  - content: done
`, "--approve", "deny")
	if r.code != 0 {
		t.Fatalf("run: %d\n%s", r.code, r.stderr)
	}
	want := "       … 18 earlier lines\n       19\n       20\n       FAILED: 2 of 20 tests\n"
	if !strings.Contains(r.stderr, want) {
		t.Errorf("the preview is not the output's tail (want %q):\n%s", want, r.stderr)
	}
	if !strings.Contains(r.stderr, "exit 0") || !strings.Contains(r.stderr, "       one\n       two\n") {
		t.Errorf("a short output is not shown whole:\n%s", r.stderr)
	}
}
