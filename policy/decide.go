package policy

import (
	"fmt"
	"strings"
)

// Decide decides one action. It is pure: no I/O, no global state.
func (p *Policy) Decide(a Action) Decision {
	switch a.Kind {
	case Command:
		return combine(p.analyse(a.Command).parts)
	case Read, Write:
		return combine([]Part{p.decideFile(a.Path, a.Kind == Write)})
	}
	return combine([]Part{{Argv: []string{}, Verdict: Deny, Rule: "always.kind", Why: fmt.Sprintf("unknown action kind %d", int(a.Kind))}})
}

// analyse runs the shell analysis of a script.
func (p *Policy) analyse(script string) *analyser {
	a := &analyser{p: p}
	if strings.TrimSpace(script) == "" {
		a.always("always.empty", []string{}, "empty command")
		return a
	}
	a.script(script, 0)
	if !a.stopped {
		a.finishRedirs()
	}
	if len(a.parts) == 0 {
		// Only comments, or only [[ ]] / (( )) with nothing to decide.
		a.add(Part{Argv: []string{}, Verdict: Allow, Rule: "empty", Note: "runs no command"}, nil)
	}
	return a
}

// combine makes the decision of a list of parts: the most restrictive
// verdict, explained by the first part that has it.
func combine(parts []Part) Decision {
	best := 0
	for i, pt := range parts {
		if pt.Verdict > parts[best].Verdict {
			best = i
		}
	}
	pt := parts[best]
	return Decision{
		Verdict: pt.Verdict,
		Reason:  reason(pt),
		Rule:    pt.Rule,
		Pattern: pt.Pattern,
		Why:     pt.Why,
		Parts:   parts,
	}
}

// reason is the one-line explanation of a part.
func reason(pt Part) string {
	what := oneLine(strings.Join(pt.Argv, " "))
	var how string
	switch {
	case pt.Rule == "commands.default" && strings.Contains(pt.Note, "allow rules must name it"):
		how = pt.Note + "; commands.default is " + pt.Verdict.String()
	case pt.Rule == "commands.default":
		how = "no rule matched; commands.default is " + pt.Verdict.String()
	case pt.Rule == "commands.dynamic":
		how = pt.Note + "; commands.dynamic is " + pt.Verdict.String()
	case strings.HasSuffix(pt.Rule, ".default"):
		how = "no glob matched; " + pt.Rule + " is " + pt.Verdict.String()
	case pt.Pattern != "":
		how = fmt.Sprintf("matched %s %q", pt.Rule, pt.Pattern)
		if pt.Why != "" {
			how += " (" + pt.Why + ")"
		}
	case pt.Why != "":
		how = pt.Why + " (" + pt.Rule + ")"
	case pt.Note != "":
		how = pt.Note
	default:
		how = pt.Rule
	}
	if what == "" {
		return how
	}
	return what + ": " + how
}

// oneLine makes s safe to show on one line.
func oneLine(s string) string {
	s = Visible(s)
	s = strings.ReplaceAll(s, "\n", `\n`)
	s = strings.ReplaceAll(s, "\t", " ")
	if len(s) > 300 {
		s = s[:300] + "..."
	}
	return s
}
