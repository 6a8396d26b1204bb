package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/testutil"
)

// A slow step is said once, on one line; a step repeated is no new line;
// after done nothing more is said.
func TestGCProgressOneLinePerSlowStep(t *testing.T) {
	defer func(d time.Duration) { gcProgressAfter = d }(gcProgressAfter)
	gcProgressAfter = 0
	var b bytes.Buffer
	p := newGCProgress(&b)
	said := func() string { p.mu.Lock(); defer p.mu.Unlock(); return b.String() }
	p.step("listing the engine's sandboxes")
	p.step("listing the engine's sandboxes")
	testutil.Eventually(t, 10*time.Second, "the progress line", func() bool { return said() != "" })
	p.done()
	p.step("removing 3 container(s) whose owner is gone")
	if got := said(); got != "agentbox gc: listing the engine's sandboxes…\n" {
		t.Errorf("progress said %q, want one line for the one step", got)
	}
}

// The summary names the other users' orphans it left, whatever it removed.
func TestGCSummaryCountsOthers(t *testing.T) {
	for _, c := range []struct {
		removed, copies, others int
		want                    string
	}{
		{0, 0, 0, "gc: nothing to remove"},
		{0, 0, 2, "gc: nothing to remove; left 2 orphaned engine object(s) of other users"},
		{1, 1, 1, "gc: removed 1 engine object(s) (containers, volumes) and 1 workspace copy or batch directory(ies); left 1 orphaned"},
	} {
		if got := gcSummary(c.removed, c.copies, c.others); !strings.HasPrefix(got, c.want) || strings.Contains(got, "\n") {
			t.Errorf("gcSummary(%d, %d, %d) = %q, want %q…", c.removed, c.copies, c.others, got, c.want)
		}
	}
}
