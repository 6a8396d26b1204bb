package agent

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"
)

// Defaults of RetryPolicy.
const (
	DefaultMaxAttempts   = 5 // one try and four retries
	DefaultBaseDelay     = time.Second
	DefaultMaxDelay      = 30 * time.Second
	DefaultMaxRetryAfter = 60 * time.Second
)

// RetryPolicy bounds the retries of a model call on 429, 5xx, network errors
// and timeouts. No retry happens on 400, 401, 403 or 404. The zero value
// uses the defaults above.
type RetryPolicy struct {
	MaxAttempts   int           // total attempts, first included; 1 = no retry
	BaseDelay     time.Duration // first backoff; doubled each retry
	MaxDelay      time.Duration // cap of the exponential backoff
	MaxRetryAfter time.Duration // cap of a Retry-After the endpoint asks for
	// Sleep waits d or until ctx is done; nil = a timer. Tests inject a
	// recorder here.
	Sleep func(ctx context.Context, d time.Duration) error
	// OnRetry is told about each retry before its wait (may be nil).
	OnRetry func(attempt int, wait time.Duration, err error)
}

func (p RetryPolicy) withDefaults() RetryPolicy {
	if p.MaxAttempts <= 0 {
		p.MaxAttempts = DefaultMaxAttempts
	}
	if p.BaseDelay <= 0 {
		p.BaseDelay = DefaultBaseDelay
	}
	if p.MaxDelay <= 0 {
		p.MaxDelay = DefaultMaxDelay
	}
	if p.MaxRetryAfter <= 0 {
		p.MaxRetryAfter = DefaultMaxRetryAfter
	}
	if p.Sleep == nil {
		p.Sleep = sleep
	}
	return p
}

// Do calls fn until it succeeds, fails for good, or the attempts run out.
func (p RetryPolicy) Do(ctx context.Context, fn func(ctx context.Context) (Response, error)) (Response, error) {
	p = p.withDefaults()
	for attempt := 1; ; attempt++ {
		resp, err := fn(ctx)
		if err == nil {
			resp.Attempts = attempt
			return resp, nil
		}
		var me *ModelError
		if !errors.As(err, &me) {
			return Response{}, err
		}
		me.Attempts = attempt
		if !me.retryable() {
			return Response{}, me
		}
		if attempt >= p.MaxAttempts {
			me.Hint = "the endpoint kept failing; check " + EnvBaseURL + " and your quota, then try again later"
			return Response{}, me
		}
		wait := p.backoff(attempt)
		if me.RetryAfter > 0 {
			wait = min(me.RetryAfter, p.MaxRetryAfter)
		}
		if p.OnRetry != nil {
			p.OnRetry(attempt, wait, me)
		}
		if err := p.Sleep(ctx, wait); err != nil {
			return Response{}, err
		}
	}
}

// backoff is BaseDelay·2^(attempt-1), capped at MaxDelay, with jitter: a
// uniformly random duration in [d/2, d].
func (p RetryPolicy) backoff(attempt int) time.Duration {
	d := p.BaseDelay
	for i := 1; i < attempt && d < p.MaxDelay; i++ {
		d *= 2
	}
	d = min(d, p.MaxDelay)
	half := d / 2
	if half <= 0 {
		return d
	}
	return half + rand.N(half+1)
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}
