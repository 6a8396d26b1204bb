package batch

import (
	"errors"
	"fmt"
	"sync"

	"github.com/agentbox/agentbox/agent"
	"github.com/agentbox/agentbox/internal/textutil"
)

// DefaultEndpointFailures is how many tasks in a row may end with the model
// endpoint failing (after its retries) before the batch stops starting
// tasks that need it; an endpoint that rejects the API key stops them at
// once. Scripted tasks still start: they never reach the endpoint.
const DefaultEndpointFailures = 3

// StatusNotStarted marks, in the summary, a task the batch did not start
// because the model endpoint kept failing. It gets no results line, so
// --resume runs it.
const StatusNotStarted = "not_started"

// ErrEndpointFailing is returned by Run when the circuit breaker stopped
// the batch from starting more tasks.
var ErrEndpointFailing = errors.New("model endpoint failing")

// breaker is the batch's shared circuit breaker on the model endpoint.
type breaker struct {
	mu     sync.Mutex
	limit  int
	redact func(string) string
	run    int // tasks in a row that ended with the endpoint failing
	reason string
}

func newBreaker(limit int, redact func(string) string) *breaker {
	if limit <= 0 {
		limit = DefaultEndpointFailures
	}
	return &breaker{limit: limit, redact: redact}
}

// observe counts one finished task and, when that trips the breaker, says
// so in a sentence. Scripted tasks never reach the endpoint and count for
// nothing; a task the endpoint answered at least once (tokens) ends a run
// of failures.
func (b *breaker) observe(t *Task, err error, tokens int) (tripped string) {
	if t.Script != nil {
		return ""
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.reason != "" {
		return ""
	}
	what := ""
	switch {
	case errors.Is(err, agent.ErrModelAuth):
		what = "the model endpoint rejected the API key"
	case errors.Is(err, agent.ErrModelUnavailable):
		b.run++
		if b.run < b.limit {
			return ""
		}
		what = fmt.Sprintf("the model endpoint failed %d tasks in a row", b.run)
	case tokens > 0:
		b.run = 0
		return ""
	default:
		return ""
	}
	b.reason = textutil.OneLine(b.redact(err.Error()), 300)
	return fmt.Sprintf("%s (%s); starting no more tasks that call the model, the running ones finish", what, b.reason)
}

// blocks reports whether t may not start: the breaker tripped and t needs
// the endpoint (a scripted task does not).
func (b *breaker) blocks(t *Task) bool {
	return t.Script == nil && b.tripped() != ""
}

// tripped is the reason the breaker tripped, or "".
func (b *breaker) tripped() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.reason
}
