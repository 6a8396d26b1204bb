package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"
	"unicode/utf8"

	"github.com/agentbox/agentbox/internal/textutil"

	"github.com/agentbox/agentbox/policy"
)

// liveLine is the Printer's one-line "what is running, for how long"
// indicator on a terminal: redrawn in place by its own goroutine until
// stopped, then erased. It never outlives the stop call.
type liveLine struct {
	stop  chan struct{}
	done  chan struct{}
	label string
	start time.Time
	// stream, when not 0, is the model step whose streamed reply the
	// line shows as it arrives (see ModelDelta).
	stream int
}

// liveTick is how often the elapsed time is redrawn.
const liveTick = 200 * time.Millisecond

// startLive shows label with a running elapsed time (only when p.Live).
// p.mu is not held.
func (p *Printer) startLive(label string) { p.startLiveAt(label, time.Now()) }

// startLiveAt is startLive counting from start.
func (p *Printer) startLiveAt(label string, start time.Time) { p.startLiveFor(label, start, 0) }

// startLiveFor is startLiveAt showing the streamed reply of model step
// stream (0: none).
func (p *Printer) startLiveFor(label string, start time.Time, stream int) {
	if !p.Live || p.Quiet {
		return
	}
	p.stopLive()
	l := &liveLine{stop: make(chan struct{}), done: make(chan struct{}), label: label, start: start, stream: stream}
	p.mu.Lock()
	p.live = l
	p.mu.Unlock()
	go func() {
		defer close(l.done)
		t := time.NewTicker(liveTick)
		defer t.Stop()
		for {
			p.mu.Lock()
			_, _ = io.WriteString(p.W, "\r\x1b[K"+p.paint(cDim, fitWidth(fmt.Sprintf("%s  %s%s", fmtElapsed(time.Since(start)), label, p.streamLabel(stream)), p.width())))
			p.mu.Unlock()
			select {
			case <-l.stop:
				return
			case <-t.C:
			}
		}
	}()
}

// stopLive erases the live line, if any, and waits for its goroutine.
func (p *Printer) stopLive() {
	p.mu.Lock()
	l := p.live
	p.live = nil
	p.mu.Unlock()
	if l == nil {
		return
	}
	close(l.stop)
	<-l.done
	p.mu.Lock()
	_, _ = io.WriteString(p.W, "\r\x1b[K")
	p.mu.Unlock()
}

// HoldLive erases the live line and stops redrawing it until resume is
// called, which brings it back (same label, same start): a question on
// the terminal must not be overwritten while it waits for its answer.
func (p *Printer) HoldLive() (resume func()) {
	p.mu.Lock()
	l := p.live
	p.mu.Unlock()
	if l == nil {
		return func() {}
	}
	p.stopLive()
	return func() { p.startLiveFor(l.label, l.start, l.stream) }
}

// LiveHolder is what HoldingLive pauses: *Printer.
type LiveHolder interface{ HoldLive() (resume func()) }

var _ LiveHolder = (*Printer)(nil)

// HoldingLive is next, with the live line held while it decides: the
// approval question stays on screen and readable.
func HoldingLive(h LiveHolder, next Approver) Approver { return holdingLive{h, next} }

type holdingLive struct {
	h    LiveHolder
	next Approver
}

func (a holdingLive) Approve(ctx context.Context, req ApprovalRequest) (Approval, error) {
	defer a.h.HoldLive()()
	return a.next.Approve(ctx, req)
}

func (p *Printer) width() int {
	if p.Width != nil {
		if w := p.Width(); w > 0 {
			return w
		}
	}
	return 80
}

// fitWidth cuts s to fewer than width columns (one column per rune; the
// cursor must not wrap), never inside a character.
func fitWidth(s string, width int) string {
	max := width - 1
	if max < 1 {
		return ""
	}
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	n := 0
	for i := range s {
		if n == max-1 {
			return s[:i] + "…"
		}
		n++
	}
	return s
}

func fmtElapsed(d time.Duration) string {
	return fmt.Sprintf("%.1f s", d.Seconds())
}

// ModelRequest shows "waiting for the model" on the live line.
func (p *Printer) ModelRequest(step, maxSteps int) {
	p.startLiveFor(fmt.Sprintf("[%d/%d] waiting for the model", step, maxSteps), time.Now(), step)
}

// ModelText is not printed: the answer is, at the end.
func (p *Printer) ModelText(int, string) {}

// ToolStarted shows the running tool on the live line.
func (p *Printer) ToolStarted(step int, tool, args string) {
	var a struct{ Command, Path string }
	_ = json.Unmarshal([]byte(args), &a)
	what := a.Command
	if what == "" {
		what = a.Path
	}
	if p.Redact != nil {
		what = p.Redact(what)
	}
	p.startLive(fmt.Sprintf("[%d] %s running  %s", step, tool, textutil.OneLine(policy.Visible(what), 300)))
}

var _ StepEvents = (*Printer)(nil)
