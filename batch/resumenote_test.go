package batch

import (
	"strings"
	"testing"

	"github.com/agentbox/agentbox/agent"
)

// Issue 40: --resume says what it skips and why, naming the flag that
// runs each kind it skips; with --rerun-interrupted the interrupted tasks
// run and are not among the skipped.
func TestResumeNoteNamesWhatRunsTheSkipped(t *testing.T) {
	finished := map[string]Line{
		"a": {ID: "a", Status: agent.StatusOK},
		"b": {ID: "b", Status: StatusInfraFailed},
		"c": {ID: "c", Status: "failed"},
	}
	interrupted := map[string]bool{"d": true, "e": true}
	got := resumeNote(Config{}, finished, interrupted, 1)
	for _, want := range []string{
		"resuming: skipping 3 finished earlier (1 ok, 1 infra_failed (--retry-infra reruns them), 1 failed (--retry-failed reruns them))",
		" and 2 interrupted (d, e: ", "never ended, so it may have had effects; --rerun-interrupted runs it again)",
		"; running 1",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("resume note lacks %q:\n%s", want, got)
		}
	}

	got = resumeNote(Config{RerunInterrupted: true}, map[string]Line{"a": finished["a"]}, interrupted, 2)
	if got != "resuming: skipping 1 finished earlier (1 ok); running 2" {
		t.Errorf("with --rerun-interrupted: %q", got)
	}
	if got := resumeNote(Config{}, nil, nil, 3); got != "" {
		t.Errorf("nothing skipped, yet the note says %q", got)
	}
}
