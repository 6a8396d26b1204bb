package docker_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/testutil"
	"github.com/agentbox/agentbox/sandbox"
)

// A start interrupted at any moment (Ctrl-C in a batch: its context ends
// while the engine creates the container) leaves no container behind,
// now or later: the engine finishes a create whose client hung up, and
// before the fix such a container landed after the label sweep that
// followed the failed call (an interrupted batch left one container and
// its volume). The interruptions sweep the start's first 400 ms; every
// session's label is checked once all starts are over, so that a
// container landing late is seen.
func TestInterruptedStartLeavesNothing(t *testing.T) {
	cli := testutil.RequireDocker(t)
	rt := testutil.Runtime(t)
	var ids []string
	for i := range 20 {
		cfg := testutil.Config(t, t.TempDir())
		cfg.SessionID = sandbox.NewID()
		ids = append(ids, cfg.SessionID)
		ctx, cancel := context.WithTimeout(context.Background(), time.Duration(i)*20*time.Millisecond)
		s, err := rt.Start(ctx, cfg)
		cancel()
		if err == nil {
			if err := s.Close(context.Background()); err != nil {
				t.Fatalf("close: %v", err)
			}
		}
		if left := testutil.Leftovers(t, cli, cfg.SessionID); len(left) != 0 {
			t.Fatalf("start interrupted after %d ms left containers %v (start: %v)", i*20, left, err)
		}
	}
	// Late landings: the engine may still be creating one when the start
	// returned. Each is looked for again after all the others ran.
	for i, id := range ids {
		if left := testutil.Leftovers(t, cli, id); len(left) != 0 {
			t.Fatalf("start interrupted after %d ms: a container landed later %v", i*20, left)
		}
	}
}
