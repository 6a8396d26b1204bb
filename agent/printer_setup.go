package agent

import (
	"fmt"
	"strings"

	"github.com/agentbox/agentbox/internal/textutil"
	"github.com/agentbox/agentbox/policy"
)

var _ SetupEvents = (*Printer)(nil)

// SetupStarted shows the running setup command on the live line.
func (p *Printer) SetupStarted(i, n int, command string) {
	if p.Quiet {
		return
	}
	if p.Redact != nil {
		command = p.Redact(command)
	}
	p.startLive(fmt.Sprintf("[setup %d/%d] running  %s", i, n, textutil.OneLine(policy.Visible(command), 300)))
}

// SetupCall prints a setup command's line, as a tool call's:
//
//	[setup 1/2] execute_bash  python3 -m venv .venv    allow commands.allow[40]  exit 0  20.9 s
//
// and the tail of its output when it failed (a denial is explained by the
// error that ends the session).
func (p *Printer) SetupCall(i, n int, o Outcome) {
	if p.Quiet {
		return
	}
	var b strings.Builder
	b.WriteString(p.callLine(fmt.Sprintf("[setup %d/%d]", i, n), o))
	switch {
	case o.Err != nil:
		b.WriteString(p.previewLines(o.Err.Error(), false))
	case o.Failure != "":
		b.WriteString(p.previewLines(o.Failure, false))
	case o.Ran && (o.ExitCode != 0 || o.TimedOut):
		b.WriteString(p.previewLines(o.Preview, true))
	}
	b.WriteString(p.execTime(o))
	p.write(b.String())
}
