package audit

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
)

// Decider decides a tool call under some policy (the CLI adapts
// policy.Policy to it).
type Decider interface {
	DecideCall(tool string, args map[string]any) (decision, rule string)
}

// Change is a recorded tool call that the new policy decides differently.
type Change struct {
	Line    int    `json:"line"`
	Session string `json:"session"`
	CallID  string `json:"call_id,omitempty"`
	Tool    string `json:"tool"`
	Summary string `json:"summary"` // the call's arguments on one line
	// Old is the policy's decision when the call was recorded: the recorded
	// decision, or "ask" when a person, a flag or a session rule made it.
	Old     string `json:"old"`
	OldRule string `json:"old_rule,omitempty"`
	// Outcome is what happened to the call (the recorded decision) when it
	// differs from Old, e.g. "allow (user)".
	Outcome string `json:"outcome,omitempty"`
	New     string `json:"new"`
	NewRule string `json:"new_rule,omitempty"`
}

// Replay re-decides every recorded tool call (its decision record; one per
// call) and every net event (see replayNet) with d and returns those whose policy decision changes. Arguments are
// the recorded ones, so calls whose arguments were redacted or summarised
// are decided on what the log holds.
func Replay(r io.Reader, d Decider) ([]Change, error) {
	var out []Change
	err := scanRaw(r, func(l rawLine, rec *Record) error {
		if rec.Event == EventNet {
			if c, changed := replayNet(l.n, rec, d); changed {
				out = append(out, c)
			}
			return nil
		}
		if rec.Event != EventToolCall || rec.Phase == PhaseResult || rec.Decision == "" {
			return nil
		}
		old, outcome := rec.Decision, ""
		switch rec.DecidedBy {
		case DecidedByLearn: // the policy's verdict; the call ran
			old, outcome = PolicyVerdict(rec.Decision), "allow (learn)"
		case "", DecidedByPolicy:
		default:
			old = "ask"
			outcome = fmt.Sprintf("%s (%s)", rec.Decision, rec.DecidedBy)
		}
		nd, nr := d.DecideCall(rec.Tool, rec.Args)
		if nd == old {
			return nil
		}
		out = append(out, Change{
			Line: l.n, Session: rec.Session, CallID: rec.CallID, Tool: rec.Tool,
			Summary: ArgsSummary(rec.Tool, rec.Args),
			Old:     old, OldRule: rec.Rule, Outcome: outcome, New: nd, NewRule: nr,
		})
		return nil
	}, nil)
	return out, err
}

// WriteChanges writes the result of Replay: a table for a person, or with
// asJSON a JSON array (empty: []).
func WriteChanges(w io.Writer, ch []Change, asJSON bool) error {
	if asJSON {
		if ch == nil {
			ch = []Change{}
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(ch)
	}
	if len(ch) == 0 {
		_, err := fmt.Fprintln(w, "no recorded call would be decided differently")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, c := range ch {
		old := c.Old
		if c.OldRule != "" {
			old += " " + c.OldRule
		}
		if c.Outcome != "" {
			old += ", then " + c.Outcome
		}
		nw := c.New
		if c.NewRule != "" {
			nw += " " + c.NewRule
		}
		fmt.Fprintf(tw, "line %d\t%s\t%s\t%s\t%s\t→ %s\n", c.Line, clean(shortID(c.Session), 8), clean(c.Tool, 30),
			clean(c.Summary, 60), clean(old, 60), clean(nw, 60))
	}
	fmt.Fprintf(tw, "%d recorded call(s) would be decided differently\n", len(ch))
	return tw.Flush()
}
