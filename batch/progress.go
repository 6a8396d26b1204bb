package batch

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/agentbox/agentbox/agent"
	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/internal/textutil"
	"github.com/agentbox/agentbox/sandbox"
)

const barWidth = 20

// progress shows the batch's progress: on a terminal one line redrawn in
// place, fitted to the terminal's width at every redraw (asked each time,
// so a resized terminal is followed), cut by display columns, never inside
// a character,
//
//	[=========>          ] 23/50  ok 21  failed 1  denied-calls 7  eta 3m  ▸ t24: fix the 日本語 docs
//
// otherwise one plain line per finished task. Quiet (--json-events) shows
// only notices.
type progress struct {
	mu      sync.Mutex
	w       io.Writer
	tty     bool
	quiet   bool
	width   func() int // terminal columns; nil = 80
	total   int
	pending int // tasks to run in this batch
	done    int // finished, earlier runs included
	ran     int // finished in this run
	ok      int
	failed  int
	denied  int
	review  int // finished tasks with held changes or alarms
	held    int // held changes of the tasks finished in this run
	alarms  int // alarms of the tasks finished in this run
	start   time.Time
	drawn   bool
	running []*Task              // started and not finished, oldest first
	since   map[string]time.Time // when each running task started
	byStat  map[string]int       // tasks finished in this run, by status
}

func newProgress(w io.Writer, tty bool, total, pending int) *progress {
	if w == nil {
		w = io.Discard
		tty = false
	}
	return &progress{w: w, tty: tty, total: total, pending: pending, start: time.Now(),
		since: map[string]time.Time{}, byStat: map[string]int{}}
}

// started reports a task picked up by a worker.
func (p *progress) started(t *Task) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.running = append(p.running, t)
	p.since[t.ID] = time.Now()
	if p.tty && !p.quiet {
		p.redraw()
	}
}

func (p *progress) stopped(id string) {
	delete(p.since, id)
	for i, t := range p.running {
		if t.ID == id {
			p.running = append(p.running[:i], p.running[i+1:]...)
			return
		}
	}
}

// count adds a task finished by an earlier run.
func (p *progress) count(l Line) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.add(l)
}

func (p *progress) add(l Line) {
	p.done++
	if l.Status == agent.StatusOK {
		p.ok++
	} else {
		p.failed++
	}
	p.denied += l.DeniedCalls
	if l.Review != "" {
		p.review++
	}
}

// draw shows the current state (on a terminal).
func (p *progress) draw() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.quiet {
		return
	}
	if p.tty {
		p.redraw() // a resumed batch said what it skips (resumeNote)
	}
}

func (p *progress) redraw() {
	fmt.Fprintf(p.w, "\r\x1b[K%s", p.line(p.columns()-1)) // the cursor must not wrap
	p.drawn = true
}

func (p *progress) columns() int {
	if p.width != nil {
		if w := p.width(); w > 0 {
			return w
		}
	}
	return 80
}

// line is the progress line in at most cols columns: when room is short
// the bar goes first, then the running task's text is cut, then the rest.
func (p *progress) line(cols int) string {
	s := fmt.Sprintf("%d/%d  ok %d  failed %d  denied-calls %d", p.done, p.total, p.ok, p.failed, p.denied)
	if p.review > 0 {
		s += fmt.Sprintf("  review %d", p.review)
	}
	if p.ran > 0 && p.ran < p.pending {
		per := time.Since(p.start) / time.Duration(p.ran)
		s += "  eta " + shortDuration(per*time.Duration(p.pending-p.ran))
	}
	cur := ""
	if n := len(p.running); n > 0 {
		t := p.running[n-1]
		cur = "  ▸ " + t.ID + ": " + textutil.OneLine(t.Task, 512)
		if n > 1 {
			cur = fmt.Sprintf("  ▸ %d running, %s: %s", n, t.ID, textutil.OneLine(t.Task, 512))
		}
	}
	// The bar only when the running task keeps room to be read.
	if bar := p.bar(); textutil.Width(bar)+1+textutil.Width(s)+min(textutil.Width(cur), 32) <= cols {
		s = bar + " " + s
	}
	if cur != "" && cols-textutil.Width(s) >= 12 {
		s += cur
	}
	return textutil.Fit(s, cols)
}

func (p *progress) bar() string {
	fill := 0
	if p.total > 0 {
		fill = p.done * barWidth / p.total
	}
	bar := strings.Repeat("=", fill)
	if fill < barWidth {
		bar += ">" + strings.Repeat(" ", barWidth-fill-1)
	}
	return "[" + bar + "]"
}

// finished reports one task of this run.
func (p *progress) finished(l Line) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.add(l)
	p.ran++
	p.byStat[l.Status]++
	p.held += l.Held
	p.alarms += l.Alarms
	p.stopped(l.ID)
	if p.quiet {
		return
	}
	if p.tty {
		if l.Status != agent.StatusOK || l.Review != "" {
			fmt.Fprintf(p.w, "\r\x1b[K%s: %s\n", l.ID, taskSummary(l))
		}
		p.redraw()
		return
	}
	fmt.Fprintf(p.w, "batch: [%d/%d] %s: %s\n", p.done, p.total, l.ID, taskSummary(l))
}

// notice prints a message without breaking the progress line.
func (p *progress) notice(msg string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tty && p.drawn {
		fmt.Fprintf(p.w, "\r\x1b[K")
	}
	fmt.Fprintln(p.w, "batch: "+msg)
	if p.tty && !p.quiet {
		p.redraw()
	}
}

// end finishes the progress line.
func (p *progress) end() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.running = nil
	if p.tty && p.drawn {
		p.redraw()
		fmt.Fprintln(p.w)
	}
}

func taskSummary(l Line) string {
	s := fmt.Sprintf("%s (exit %d)  %d steps  %d files changed  %s", l.ShownStatus(), l.Exit, l.Steps, audit.CountFiles(l.FilesChanged),
		shortDuration(time.Duration(l.DurationMS)*time.Millisecond))
	if l.DeniedCalls > 0 {
		s += fmt.Sprintf("  %d denied", l.DeniedCalls)
	}
	if l.Review != "" {
		s += "  review: " + l.Review
	}
	if l.Error != "" {
		s += "  " + textutil.OneLine(l.Error, 160)
	}
	return s
}

func shortDuration(d time.Duration) string {
	switch {
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", d.Seconds())
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
}

// WriteTable writes the summary as a table, one row per finished task,
// and a totals line.
func (s Summary) WriteTable(w io.Writer) {
	width := 2
	for _, l := range s.Tasks {
		width = max(width, len(l.ID))
	}
	fmt.Fprintf(w, "%-*s  %-12s %4s %5s %8s %8s %6s %5s %6s  %-12s %5s %5s\n", width, "id", "status", "exit", "steps", "tokens", "time", "files", "held", "alarms", "session", "calls", "fail")
	for _, l := range s.Tasks {
		sess := l.Session
		if len(sess) > 12 {
			sess = sess[:12]
		}
		fmt.Fprintf(w, "%-*s  %-12s %4d %5d %8d %8s %6d %5d %6d  %-12s %5d %5d\n", width, l.ID, l.ShownStatus(), l.Exit, l.Steps, l.Tokens,
			shortDuration(time.Duration(l.DurationMS)*time.Millisecond), audit.CountFiles(l.FilesChanged), l.Held, l.Alarms, sess, l.Usage.Calls, l.Usage.FailedCalls)
	}
	fmt.Fprintf(w, "%d tasks: %d ok, %d failed, %d not run", s.Total, s.OK, s.Failed, s.NotRun)
	if s.Review > 0 {
		fmt.Fprintf(w, "; %d to review (marked !: %s)", s.Review, plural(s.Usage.Held, "held change")+", "+plural(s.Usage.Alarms, "alarm"))
	}
	if s.Skipped > 0 {
		fmt.Fprintf(w, " (%d finished earlier)", s.Skipped)
	}
	fmt.Fprintf(w, "; %d denied calls, %d tokens, %s (%.1f tasks/min); results in %s\n", s.DeniedCalls, s.Tokens,
		shortDuration(time.Duration(s.DurationMS)*time.Millisecond), s.TasksPerMin, s.Results)
	u := s.Usage
	fmt.Fprintf(w, "inside: %d calls (%d failed, %d timed out), %d exec denials, %d alarms, %d held changes, %d OOM kills", u.Calls, u.FailedCalls,
		u.TimedOutCalls, u.ExecDenials, u.Alarms, u.Held, u.OOMKills)
	if u.Measured {
		fmt.Fprintf(w, ", %.1f CPU-s, peak %d MiB, %d MiB written", u.CPUSeconds, u.PeakMemoryBytes>>20, u.BytesWritten>>20)
	}
	fmt.Fprintf(w, ", %d network bytes", u.NetBytes)
	if len(s.SandboxStarts) > 0 {
		fmt.Fprintf(w, "; sandboxes from the warm pool: %d warm, %d cold", s.SandboxStarts[sandbox.StartWarm], s.SandboxStarts[sandbox.StartCold])
	}
	fmt.Fprintf(w, "; batch %s\n", s.Batch)
}
