package agent

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/internal/textutil"
	"github.com/agentbox/agentbox/policy"
)

// Events receives the progress of a run. Calls come from the goroutine
// running Run, in order.
type Events interface {
	// Planned reports the plan (ok false: the reply was no usable plan and
	// the whole task runs as one step).
	Planned(steps []string, ok bool)
	// ToolCall reports one finished tool call of model step step.
	ToolCall(step, maxSteps int, o Outcome)
	// StepDone reports that plan step planStep of planSteps is done.
	StepDone(step, maxSteps, planStep, planSteps int, summary string)
	// Notice reports something worth a line (a nudge, an elision, a
	// warning).
	Notice(msg string)
	// Finished reports the result.
	Finished(step, maxSteps int, r Result)
}

// NopEvents ignores everything.
type NopEvents struct{}

func (NopEvents) Planned([]string, bool)              {}
func (NopEvents) ToolCall(int, int, Outcome)          {}
func (NopEvents) StepDone(int, int, int, int, string) {}
func (NopEvents) Notice(string)                       {}
func (NopEvents) Finished(int, int, Result)           {}

var (
	_ Events = NopEvents{}
	_ Events = (*Printer)(nil)
)

// Printer writes one line per tool call, an indented preview of its output
// and a final line:
//
//	[1/30] execute_bash  find . -name '*.py' | wc -l    allow commands.allow[3]  exit 0  4 ms
//	       3
//	[3/30] done: There are 3 Python files; the count is in count.txt.
//
// In quiet mode only the final answer (or the reason there is none) is
// written. Colour is used only when Color is set (the CLI decides: a
// terminal and no NO_COLOR). Everything written goes through Redact.
type Printer struct {
	W            io.Writer
	Quiet        bool
	Color        bool
	PreviewLines int                 // lines of output shown per call; default 3, <0 none
	Redact       func(string) string // nil = none
	// OmitAnswer leaves the final answer out (the CLI prints it on stdout).
	OmitAnswer bool
	// Live shows a live elapsed-time line while a model request or a tool
	// call runs (the CLI sets it on a terminal without TERM=dumb); Width
	// is the terminal's width (nil: 80).
	Live  bool
	Width func() int

	mu       sync.Mutex
	live     *liveLine
	streamed streamView
}

const (
	cReset = "\x1b[0m"
	cDim   = "\x1b[2m"
	cRed   = "\x1b[31m"
	cGreen = "\x1b[32m"
	cYel   = "\x1b[33m"
	cBold  = "\x1b[1m"
)

func (p *Printer) paint(code, s string) string {
	if !p.Color || s == "" {
		return s
	}
	return code + s + cReset
}

func (p *Printer) write(s string) {
	if p.Redact != nil {
		s = p.Redact(s)
	}
	p.stopLive()
	p.mu.Lock()
	defer p.mu.Unlock()
	_, _ = io.WriteString(p.W, s)
}

// Planned prints the plan.
func (p *Printer) Planned(steps []string, ok bool) {
	if p.Quiet {
		return
	}
	if !ok {
		p.write(p.paint(cDim, "plan: the model gave no usable plan; running the task as one step") + "\n")
		return
	}
	var b strings.Builder
	b.WriteString(p.paint(cBold, "plan:") + "\n")
	for i, s := range steps {
		fmt.Fprintf(&b, "  %d. %s\n", i+1, textutil.OneLine(policy.Visible(s), 200))
	}
	p.write(b.String())
}

// ToolCall prints the call's line and a preview of its output.
func (p *Printer) ToolCall(step, maxSteps int, o Outcome) {
	if p.Quiet {
		return
	}
	var b strings.Builder
	b.WriteString(p.callLine(fmt.Sprintf("[%d/%d]", step, maxSteps), o))
	preview, tail := o.Preview, true
	if o.Denied || o.Invalid || o.Err != nil || o.Failure != "" {
		preview, tail = o.Text, false
		if o.Err != nil {
			preview = o.Err.Error()
		}
	}
	if s, ok := lookupTool(o.Tool); ok && s.quiet && !o.Denied && o.Failure == "" && o.Err == nil {
		preview = ""
	}
	b.WriteString(p.previewLines(preview, tail))
	b.WriteString(p.execTime(o))
	p.write(b.String())
}

// callLine is a call's line after its label ("[3/30]"): the tool, what it
// was given, the verdict and rule, and how it ended.
func (p *Printer) callLine(label string, o Outcome) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %-13s %-44s", label, textutil.Clip(policy.Visible(o.Tool), 40), textutil.OneLine(policy.Visible(o.Summary), 60))
	verdict := o.Decision
	st := callStatus(o)
	switch st {
	case "invalid":
		verdict = p.paint(cRed, "invalid")
	case "denied":
		verdict = p.paint(cRed, "deny")
	default:
		verdict = p.paint(cGreen, verdict)
	}
	b.WriteString("  " + verdict)
	if o.Rule != "" {
		b.WriteString(" " + o.Rule)
	}
	if o.DecidedBy != "" && o.DecidedBy != "policy" {
		b.WriteString(" (" + o.DecidedBy + ")")
	}
	switch {
	case st == "failed" || st == "interrupted" || (st == "timed out" && !o.Ran):
		b.WriteString("  " + p.paint(cRed, st))
		if o.Duration > 0 {
			b.WriteString("  " + fmtDuration(o.Duration))
		}
	case o.Ran:
		if s, ok := lookupTool(o.Tool); ok && s.status != nil {
			st, warn := s.status(o)
			if warn {
				st = p.paint(cYel, st)
			}
			b.WriteString("  " + st)
		}
		b.WriteString("  " + fmtDuration(o.Duration))
	}
	b.WriteByte('\n')
	return b.String()
}

// ExecTime prints only the programs stopped at exec time and the effects
// undone during a call (agentbox exec prints the output itself).
func (p *Printer) ExecTime(o Outcome) {
	if s := p.execTime(o); s != "" && !p.Quiet {
		p.write(s)
	}
}

// execTime lists the programs stopped at exec time and the effects undone
// during a call.
func (p *Printer) execTime(o Outcome) string {
	var b strings.Builder
	for i, d := range o.DeniedExecs {
		if i == maxListed {
			fmt.Fprintf(&b, "      … %d more denied at exec time (see the audit log)\n", len(o.DeniedExecs)-maxListed)
			break
		}
		fmt.Fprintf(&b, "      %s %s  %s %s\n", p.paint(cRed, "exec denied:"), textutil.OneLine(policy.Visible(quoteArgv(d.Argv)), 80), d.Decision, d.Rule)
	}
	for i, a := range o.Alarms {
		if i == maxListed {
			fmt.Fprintf(&b, "      … %d more effects undone (see the audit log)\n", len(o.Alarms)-maxListed)
			break
		}
		fmt.Fprintf(&b, "      %s %s\n", p.paint(cYel, "alarm:"), textutil.OneLine(policy.Visible(alarmLine(a)), 100))
	}
	if p.Redact != nil {
		return p.Redact(b.String())
	}
	return b.String()
}

// previewLines is the indented preview of a call's output: all of it when
// short, else its last lines (tail: where a failing test run or build
// says what failed) or, for a message (a denial, a failure), its first.
func (p *Printer) previewLines(s string, tail bool) string {
	n := p.PreviewLines
	if n == 0 {
		n = 3
	}
	s = strings.TrimRight(s, "\n")
	if n < 0 || s == "" {
		return ""
	}
	lines := strings.Split(s, "\n")
	var b strings.Builder
	line := func(l string) {
		b.WriteString("       " + p.paint(cDim, textutil.Clip(policy.Visible(strings.TrimRight(l, "\r")), 160)) + "\n")
	}
	more := func(k int, where string) {
		fmt.Fprintf(&b, "       %s\n", p.paint(cDim, fmt.Sprintf("… %d %s lines", k, where)))
	}
	switch {
	case len(lines) <= n:
		for _, l := range lines {
			line(l)
		}
	case tail:
		more(len(lines)-n, "earlier")
		for _, l := range lines[len(lines)-n:] {
			line(l)
		}
	default:
		for _, l := range lines[:n] {
			line(l)
		}
		more(len(lines)-n, "more")
	}
	return b.String()
}

// StepDone prints the summary of a finished plan step.
func (p *Printer) StepDone(step, maxSteps, planStep, planSteps int, summary string) {
	if p.Quiet {
		return
	}
	p.write(fmt.Sprintf("[%d/%d] %s %s\n", step, maxSteps, p.paint(cBold, fmt.Sprintf("step %d/%d done:", planStep, planSteps)), textutil.OneLine(policy.Visible(summary), 300)))
}

// Notice prints a dim note.
func (p *Printer) Notice(msg string) {
	if p.Quiet {
		return
	}
	p.write(p.paint(cDim, "note: "+textutil.OneLine(policy.Visible(msg), 300)) + "\n")
}

// Finished prints the final answer, or why there is none.
func (p *Printer) Finished(step, maxSteps int, r Result) {
	p.stopLive()
	if p.Quiet {
		if r.Status == StatusOK && !p.OmitAnswer {
			p.write(policy.Visible(r.Answer) + "\n")
		}
		return
	}
	if r.Status == StatusOK && p.OmitAnswer {
		p.write(fmt.Sprintf("[%d/%d] %s\n", step, maxSteps, p.paint(cBold+cGreen, "done")))
	} else if r.Status == StatusOK {
		p.write(fmt.Sprintf("[%d/%d] %s %s\n", step, maxSteps, p.paint(cBold+cGreen, "done:"), policy.Visible(strings.TrimSpace(r.Answer))))
	} else {
		p.write(fmt.Sprintf("[%d/%d] %s %s\n", step, maxSteps, p.paint(cBold+cRed, "stopped ("+r.Status+"):"), textutil.OneLine(policy.Visible(r.Error), 800)))
	}
	if line := filesChangedLine(r.FilesChanged); line != "" {
		p.write(p.paint(cDim, line) + "\n")
	}
	if why := audit.Incomplete(r.FilesChanged); why != "" {
		p.write(p.paint(cBold+cRed, "the list of changed files is INCOMPLETE ("+why+"): nothing will be applied from it") + "\n")
	}
}

// Retry prints a model retry; use it as RetryPolicy.OnRetry.
func (p *Printer) Retry(attempt int, wait time.Duration, err error) {
	if p.Quiet {
		return
	}
	p.write(p.paint(cYel, fmt.Sprintf("model: %s; retry %d in %s", textutil.OneLine(policy.Visible(err.Error()), 200), attempt, wait.Round(time.Millisecond))) + "\n")
}

func fmtDuration(d time.Duration) string {
	switch {
	case d < time.Second:
		return fmt.Sprintf("%d ms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%.1f s", d.Seconds())
	}
	return d.Round(time.Second).String()
}
