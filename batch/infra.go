package batch

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/agentbox/agentbox/internal/textutil"
	"github.com/agentbox/agentbox/sandbox"
)

// StatusInfraFailed is a task that did not get a working sandbox for
// reasons outside the task: the engine (or cluster) unreachable, the
// sandbox failed to start or its executor died, the image missing. Its
// exit is 125; --retry-infra reruns these, --retry-failed does not.
const StatusInfraFailed = "infra_failed"

// ErrInfraStopped is returned by Run when the infrastructure breaker
// stopped the batch: the engine did not come back within the pause bound.
var ErrInfraStopped = errors.New("sandbox infrastructure failing")

// Bounds of the infrastructure breaker (Config.Infra* override them).
const (
	// DefaultInfraRetries is how many times a task's sandbox start is
	// retried (with backoff) before the task is infra_failed.
	DefaultInfraRetries = 3
	// DefaultInfraFailures is how many tasks in a row may end infra_failed
	// before the batch pauses, waiting for the engine.
	DefaultInfraFailures = 3
	// DefaultInfraPause is how long a paused batch waits for the engine
	// before it stops starting tasks.
	DefaultInfraPause = 5 * time.Minute
)

// Backoff of the retries: first, and most between two attempts.
const (
	infraBackoff    = 500 * time.Millisecond
	infraBackoffMax = 10 * time.Second
)

// isInfra reports whether err is the infrastructure's failure, not the
// task's.
func isInfra(err error) bool {
	return errors.Is(err, sandbox.ErrUnavailable) || errors.Is(err, sandbox.ErrImageMissing) || errors.Is(err, sandbox.ErrExecutor)
}

// infraBreaker is the batch's shared breaker on the infrastructure: it
// counts tasks in a row whose sandbox could not be started; past the
// limit the batch pauses (every start keeps retrying, slowly) until a
// start succeeds, or stops once the pause lasted its bound.
type infraBreaker struct {
	mu       sync.Mutex
	retries  int
	limit    int
	bound    time.Duration
	run      int       // tasks in a row that ended infra_failed
	paused   time.Time // zero: not paused
	stopped  string    // why the batch stopped starting tasks
	notice   func(string)
	lastWhy  string
	pauseCnt int
}

func newInfraBreaker(cfg Config, notice func(string)) *infraBreaker {
	ib := &infraBreaker{retries: cfg.InfraRetries, limit: cfg.InfraFailures, bound: cfg.InfraPause, notice: notice}
	if ib.retries <= 0 {
		ib.retries = DefaultInfraRetries
	}
	if ib.limit <= 0 {
		ib.limit = DefaultInfraFailures
	}
	if ib.bound <= 0 {
		ib.bound = DefaultInfraPause
	}
	return ib
}

// start runs try (a sandbox start) until it succeeds, fails for a reason
// that is not the infrastructure's, or the breaker gives up on it.
func (ib *infraBreaker) start(ctx context.Context, try func() (sandbox.Session, error)) (sandbox.Session, error) {
	for attempt := 0; ; attempt++ {
		if why := ib.tripped(); why != "" {
			return nil, fmt.Errorf("%w: %s; the batch starts no more tasks", ErrInfraStopped, why)
		}
		sess, err := try()
		if err == nil {
			ib.succeeded()
			return sess, nil
		}
		if !isInfra(err) || ctx.Err() != nil || errors.Is(err, sandbox.ErrImageMissing) {
			return nil, err
		}
		wait, again := ib.failed(err, attempt)
		if !again {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(wait):
		}
	}
}

// failed decides after a failed attempt whether to try again, and when.
func (ib *infraBreaker) failed(err error, attempt int) (time.Duration, bool) {
	ib.mu.Lock()
	defer ib.mu.Unlock()
	wait := min(infraBackoff<<min(attempt, 8), infraBackoffMax)
	ib.lastWhy = textutil.OneLine(err.Error(), 300)
	if ib.stopped != "" {
		return 0, false
	}
	if !ib.paused.IsZero() {
		if time.Since(ib.paused) > ib.bound {
			ib.stopped = fmt.Sprintf("the sandbox infrastructure did not come back within %s (%s)", ib.bound, ib.lastWhy)
			ib.notice(ib.stopped + "; starting no more tasks")
			return 0, false
		}
		return wait, true
	}
	if attempt < ib.retries {
		return wait, true
	}
	ib.run++
	if ib.run < ib.limit {
		return 0, false // this task is infra_failed
	}
	ib.paused = time.Now()
	ib.pauseCnt++
	ib.notice(fmt.Sprintf("%d tasks in a row could not get a sandbox (%s): pausing the batch, waiting up to %s for the engine", ib.run, ib.lastWhy, ib.bound))
	return wait, true
}

// succeeded closes the breaker after a sandbox started.
func (ib *infraBreaker) succeeded() {
	ib.mu.Lock()
	defer ib.mu.Unlock()
	if !ib.paused.IsZero() {
		ib.notice(fmt.Sprintf("the engine answers again after %s: resuming the batch", time.Since(ib.paused).Round(time.Second)))
	}
	ib.paused, ib.run = time.Time{}, 0
}

// tripped is why the breaker stopped the batch, or "".
func (ib *infraBreaker) tripped() string {
	ib.mu.Lock()
	defer ib.mu.Unlock()
	return ib.stopped
}

// pauses is how many times the batch paused.
func (ib *infraBreaker) pauses() int {
	ib.mu.Lock()
	defer ib.mu.Unlock()
	return ib.pauseCnt
}

// OnlyInfra reports whether every task that is not ok ended infra_failed:
// the batch then exits 125, the sandbox could not be provided.
func (s Summary) OnlyInfra() bool {
	return s.ByStatus[StatusInfraFailed] > 0 && s.ByStatus[StatusInfraFailed] == s.Total-s.OK
}
