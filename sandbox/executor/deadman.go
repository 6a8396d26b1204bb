package executor

import (
	"bufio"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentbox/agentbox/sandbox/wire"
)

// ErrDeadMan is returned by Serve when the host fell silent past the
// hello's deadline: every process was killed.
var ErrDeadMan = errors.New("executor: no frame from the host within the deadline; every process was killed")

// link is the executor's side of the channel to the host once hello is
// done: one reader of stdin, serialised writers of stdout, the dead man's
// switch, and the asks of a running exec.
type link struct {
	wmu sync.Mutex
	w   *bufio.Writer
	key []byte

	lastSeen atomic.Int64 // unix nanoseconds of the last frame
	approver bool
	answers  chan wire.Answer
	cancels  chan uint64 // ids of execs the host cancelled
	askSeq   atomic.Uint64
	dead     chan struct{} // closed when the switch fires

	mux *wire.Mux // the proxy channel's streams (nil without one)
	seq uint64    // the last stream frame's Seq (under wmu)
}

// reply writes one authenticated frame.
func (l *link) reply(resp *wire.Response) error {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	if err := wire.WriteResponse(l.w, l.key, resp); err != nil {
		return fmt.Errorf("executor: writing response: %w", err)
	}
	return l.w.Flush()
}

// read delivers requests in sequence; pings only reset the switch and
// answers go to the waiting ask. It ends at the first error (io.EOF when
// the host closed stdin).
func (l *link) read(r *bufio.Reader, last uint64, reqs chan<- *wire.Request, errc chan<- error) {
	l.lastSeen.Store(time.Now().UnixNano())
	for {
		req, err := wire.ReadRequest(r, l.key)
		if err != nil {
			// Forged or corrupted: stop serving; the host fails closed.
			errc <- err
			return
		}
		if req.ID != last+1 {
			errc <- fmt.Errorf("request id %d out of sequence (want %d)", req.ID, last+1)
			return
		}
		last = req.ID
		l.lastSeen.Store(time.Now().UnixNano())
		switch req.Op {
		case wire.OpPing:
		case wire.OpStream:
			if err := l.deliver(req); err != nil {
				errc <- err
				return
			}
		case wire.OpCancel:
			// The newest cancel wins: one still pending is stale (its
			// exec has ended) or the same.
			select {
			case l.cancels <- req.Target:
			default:
				select {
				case <-l.cancels:
				default:
				}
				l.cancels <- req.Target // only this goroutine sends: there is room
			}
		case wire.OpAnswer:
			if req.Answer != nil {
				select {
				case l.answers <- *req.Answer:
				default: // nobody asked that many: drop
				}
			}
		default:
			select {
			case reqs <- req:
			case <-l.dead:
				return
			}
		}
	}
}

// watch starts the dead man's switch: when no frame arrives for deadlineMS,
// kill runs and dead closes. 0 disables it. The returned func stops it.
func (l *link) watch(deadlineMS int64, kill func()) (stop func()) {
	if deadlineMS <= 0 {
		return func() {}
	}
	deadline := time.Duration(deadlineMS) * time.Millisecond
	quit := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(max(deadline/8, 10*time.Millisecond))
		defer t.Stop()
		for {
			select {
			case <-quit:
				return
			case <-t.C:
				if time.Since(time.Unix(0, l.lastSeen.Load())) > deadline {
					kill()
					close(l.dead)
					return
				}
			}
		}
	}()
	return func() { close(quit); <-done }
}

// asker returns the tracer's ask for one exec request: it sends an Ask
// frame carrying the request's id and waits for the matching answer until
// the call's deadline. Without an approver on the host it denies at once.
func (l *link) asker(id uint64, deadline time.Time) func(argv []string, pid int, d Decision) bool {
	return func(argv []string, pid int, d Decision) bool {
		if !l.approver {
			return false
		}
		seq := l.askSeq.Add(1)
		if err := l.reply(&wire.Response{ID: id, Ask: &wire.Ask{Seq: seq, Argv: argv, PID: pid, Rule: d.Rule, Reason: d.Reason}}); err != nil {
			return false
		}
		t := time.NewTimer(time.Until(deadline))
		defer t.Stop()
		for {
			select {
			case a := <-l.answers:
				if a.Seq == seq {
					return a.Allow
				}
			case <-t.C:
				return false
			case <-l.dead:
				return false
			}
		}
	}
}
