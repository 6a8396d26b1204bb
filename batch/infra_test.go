package batch

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/testutil"
	"github.com/agentbox/agentbox/sandbox"
)

// downRuntime is the real runtime behind an engine that is down while
// down is set: every start fails as an unreachable engine does.
type downRuntime struct {
	sandbox.Runtime
	down     atomic.Bool
	attempts atomic.Int64
}

func (d *downRuntime) Start(ctx context.Context, cfg sandbox.Config) (sandbox.Session, error) {
	d.attempts.Add(1)
	if d.down.Load() {
		return nil, fmt.Errorf("%w: cannot reach the Docker engine: connection refused", sandbox.ErrUnavailable)
	}
	return d.Runtime.Start(ctx, cfg)
}

// TestInfraBreaker: with the engine down, tasks end infra_failed (exit 125)
// after bounded retries, not setup_failed; after three in a row the batch
// pauses with a visible line instead of burning through the list (the
// third task waits in it), resumes when the engine answers, and the rest
// succeed. --retry-infra reruns
// exactly the infra_failed tasks; --retry-failed does not.
func TestInfraBreaker(t *testing.T) {
	src := t.TempDir()
	writeFile(t, src+"/in.txt", "in\n")
	var tasks []Task
	for i := range 6 {
		tasks = append(tasks, Task{ID: fmt.Sprintf("t%d", i), Task: "t", Workspace: src, Script: script(bash("echo ok > o.txt"), answer("ok"))})
	}
	cfg, _, cli := testConfig(t, tasks)
	rt := &downRuntime{Runtime: cfg.Runtime}
	rt.down.Store(true)
	out := &testutil.LockedBuffer{}
	cfg.Runtime, cfg.Concurrency, cfg.NoPool, cfg.Progress = rt, 1, true, out
	cfg.InfraRetries, cfg.InfraFailures, cfg.InfraPause = 2, 3, time.Minute
	done := make(chan struct{})
	var sum Summary
	var err error
	go func() { defer close(done); sum, err = Run(context.Background(), cfg) }()
	paused := func() bool {
		return strings.Contains(out.String(), "pausing the batch, waiting up to 1m0s for the engine")
	}
	waitFor(t, "the batch to pause", paused)
	n := rt.attempts.Load()
	waitFor(t, "the paused batch to keep probing", func() bool { return rt.attempts.Load() > n+1 })
	rt.down.Store(false)
	<-done
	if err != nil {
		t.Fatalf("batch: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "the engine answers again") {
		t.Errorf("no line saying the batch resumed:\n%s", out.String())
	}
	// Two tasks failed before the breaker paused; the third waited and ran.
	if sum.ByStatus[StatusInfraFailed] != 2 || sum.OK != 4 || !sum.OnlyInfra() {
		t.Fatalf("summary %+v\n%s", sum.ByStatus, out.String())
	}
	for _, l := range sum.Tasks {
		if l.Status == StatusInfraFailed && (l.Exit != exitUnavailable || !strings.Contains(l.Error, "cannot reach")) {
			t.Errorf("%s: %+v", l.ID, l)
		}
	}
	noLeftovers(t, cli)

	cfg.Resume, cfg.RetryFailed = true, true
	if sum, err = Run(context.Background(), cfg); err != nil || sum.Ran != 0 {
		t.Errorf("--retry-failed reran %d infra_failed tasks: %v", sum.Ran, err)
	}
	cfg.RetryFailed, cfg.RetryInfra = false, true
	if sum, err = Run(context.Background(), cfg); err != nil || sum.Ran != 2 || !sum.AllOK() {
		t.Errorf("--retry-infra: ran %d, %+v, %v", sum.Ran, sum.ByStatus, err)
	}
	noLeftovers(t, cli)
}

// TestInfraBreakerStops: an engine that does not come back within the
// pause bound stops the batch: the rest are not_started, Run says
// ErrInfraStopped.
func TestInfraBreakerStops(t *testing.T) {
	ib := newInfraBreaker(Config{InfraRetries: 1, InfraFailures: 1, InfraPause: 50 * time.Millisecond}, func(string) {})
	down := func() (sandbox.Session, error) { return nil, fmt.Errorf("%w: refused", sandbox.ErrUnavailable) }
	if _, err := ib.start(context.Background(), down); !errors.Is(err, sandbox.ErrUnavailable) {
		t.Fatalf("first start: %v", err)
	}
	if ib.tripped() == "" || ib.pauses() != 1 {
		t.Fatalf("not stopped after the bound: %q %d", ib.tripped(), ib.pauses())
	}
	if _, err := ib.start(context.Background(), down); !errors.Is(err, ErrInfraStopped) {
		t.Errorf("a start after the stop: %v", err)
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
