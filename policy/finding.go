package policy

import (
	"fmt"
	"strings"
)

// Finding is one way a policy (NEW) decides less restrictively than another
// (the boundary): a field that is looser, or a rule of the boundary that
// NEW does not keep, with a concrete action both decide when one exists.
type Finding struct {
	Field   string   `json:"field"` // "commands", "files.write", "sandbox.background", ...
	What    string   `json:"what"`  // one line
	Example *Example `json:"example,omitempty"`
	More    int      `json:"more,omitempty"` // further actions decided the same way by the same rules
}

// Example is a concrete action and how both policies decide it.
type Example struct {
	Kind         string  `json:"kind"`    // command | read | write | connect
	Subject      string  `json:"subject"` // the script, path or host:port
	New          Verdict `json:"new"`
	NewRule      string  `json:"new_rule,omitempty"`
	Boundary     Verdict `json:"boundary"`
	BoundaryRule string  `json:"boundary_rule,omitempty"`
	Source       string  `json:"source,omitempty"` // where the action came from: a rule, the corpus, a log line
}

// String is the finding on one line, safe for a terminal.
func (f Finding) String() string {
	s := f.Field + ": " + oneLine(f.What)
	if e := f.Example; e != nil {
		s += fmt.Sprintf(" (e.g. %s %s: %s%s, boundary %s%s)", e.Kind, oneLine(quoteSubject(e)),
			e.New, ruleSuffix(e.NewRule), e.Boundary, ruleSuffix(e.BoundaryRule))
	}
	if f.More > 0 {
		s += fmt.Sprintf(" and %d more like it", f.More)
	}
	return s
}

func quoteSubject(e *Example) string {
	if e.Kind == "command" {
		return "`" + e.Subject + "`"
	}
	return e.Subject
}

func ruleSuffix(r string) string {
	if r == "" {
		return ""
	}
	return " by " + r
}

// exampleFor decides a probe under both policies and returns the example
// when NEW is less restrictive.
func exampleFor(n, b *Policy, pr Probe) (*Example, bool) {
	e := &Example{Kind: pr.kind(), Subject: pr.subject(), Source: pr.Source}
	if pr.Connect != "" {
		nd, nr := n.connectVerdict(pr.Connect, pr.Addr)
		bd, br := b.connectVerdict(pr.Connect, pr.Addr)
		e.New, e.NewRule, e.Boundary, e.BoundaryRule = nd, nr, bd, br
	} else {
		nd, bd := n.Decide(pr.Action), b.Decide(pr.Action)
		e.New, e.NewRule, e.Boundary, e.BoundaryRule = nd.Verdict, nd.Rule, bd.Verdict, bd.Rule
	}
	return e, e.New < e.Boundary
}

// fieldOf names the part of the policy a probe exercises.
func (pr Probe) field() string {
	switch {
	case pr.Connect != "":
		return "network"
	case pr.Action.Kind == Read:
		return "files.read"
	case pr.Action.Kind == Write:
		return "files.write"
	}
	return "commands"
}

func (pr Probe) kind() string {
	if pr.Connect != "" {
		return "connect"
	}
	return pr.Action.Kind.String()
}

func (pr Probe) subject() string {
	switch {
	case pr.Connect != "":
		return pr.Connect
	case pr.Action.Kind == Command:
		return pr.Action.Command
	}
	return pr.Action.Path
}

// quoteArgv joins argv into a script that runs exactly argv.
func quoteArgv(argv []string) string {
	out := make([]string, len(argv))
	for i, a := range argv {
		if a != "" && strings.Trim(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%") == "" {
			out[i] = a
			continue
		}
		out[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(out, " ")
}
