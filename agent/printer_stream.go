package agent

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/agentbox/agentbox/policy"
)

// streamView is what the Printer keeps of a streamed reply to show it on
// the live line.
type streamView struct {
	step  int
	text  strings.Builder // up to streamShowMax bytes
	over  bool            // the text outgrew streamShowMax: only its size is shown
	chars int             // bytes of text
	tool  string          // the tool call being written
	calls int
	args  int // bytes of tool-call arguments
}

// streamShowMax bounds the text the live line redacts to show its tail.
const streamShowMax = 64 << 10

// streamTail is how many characters of the text the live line shows.
const streamTail = 48

var _ DeltaEvents = (*Printer)(nil)

// ModelDelta follows a streamed reply for the live line, which shows it
// arriving: its size and the tail of its text, or the tool call being
// written.
func (p *Printer) ModelDelta(step int, d Delta) {
	if !p.Live || p.Quiet {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	s := &p.streamed
	if s.step != step || d.Failed {
		*s = streamView{step: step}
	}
	if s.over || s.text.Len()+len(d.Text) > streamShowMax {
		s.over = true
	} else {
		s.text.WriteString(d.Text)
	}
	s.chars += len(d.Text)
	if d.Tool != "" {
		s.tool = d.Tool
		s.calls++
	}
	s.args += d.ArgBytes
}

// streamLabel is the live line's view of step's streamed reply ("" when
// nothing arrived). The text is redacted as a whole; a token still
// arriving, and a private key block not yet ended, are held back, so a
// secret never shows in part. p.mu is held.
func (p *Printer) streamLabel(step int) string {
	s := &p.streamed
	if step == 0 || s.step != step || (s.chars == 0 && s.calls == 0) {
		return ""
	}
	if s.calls > 0 {
		what := policy.Visible(s.tool)
		if s.calls > 1 {
			what = fmt.Sprintf("%d tool calls, now %s", s.calls, what)
		}
		return fmt.Sprintf("  writing %s (%s)", what, fmtBytes(s.args))
	}
	if s.over {
		return "  receiving " + fmtBytes(s.chars)
	}
	t := s.text.String()
	t = t[:safeCut([]byte(t))]
	if k := openKeyBlock([]byte(t)); k >= 0 {
		t = t[:k]
	}
	if p.Redact != nil {
		t = p.Redact(t)
	}
	t = strings.Join(strings.Fields(policy.Visible(t)), " ")
	if n := utf8.RuneCountInString(t); n > streamTail {
		r := []rune(t)
		t = "…" + string(r[n-streamTail:])
	}
	return fmt.Sprintf("  receiving %s  %s", fmtBytes(s.chars), t)
}

func fmtBytes(n int) string {
	if n < 1000 {
		return fmt.Sprintf("%d B", n)
	}
	return fmt.Sprintf("%.1f kB", float64(n)/1000)
}
