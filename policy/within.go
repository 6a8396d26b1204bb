package policy

import "fmt"

// Report is the result of Within: how NEW is looser than the boundary.
// Looser holds the findings with a concrete action NEW decides less
// restrictively (or a looser field); Unproven the parts of the proof that
// did not go through although no counterexample was found. NEW stays
// within the boundary when both are empty.
type Report struct {
	Looser   []Finding `json:"looser"`
	Unproven []Finding `json:"unproven,omitempty"`
	Probes   int       `json:"probes"` // concrete actions decided in the search
}

// Holds reports whether NEW was proven to stay within the boundary.
func (r Report) Holds() bool { return len(r.Looser) == 0 && len(r.Unproven) == 0 }

// Within checks that n never decides less restrictively than b: nothing b
// denies is asked or allowed, nothing b asks is allowed, on every field.
//
// The proof compares the structure: every non-rule field (CompareSettings),
// the command rules over every static argv and the file and network rules
// over every path and host, exactly, by automata built from the rules
// (character classes in globs are not modelled and stay unproven). Every
// part that does not go through yields a witness, which is confirmed by
// deciding it under both policies with the full analysis. The
// counterexample search then decides probes drawn from both policies'
// rules, the public corpus and extra (for instance the calls of audit
// logs): it catches what the rule structure alone does not show (options
// that make an allowed command destructive, script files run by a shell).
func Within(n, b *Policy, extra []Probe) Report {
	var r Report
	seen := map[string]bool{}
	group := map[string]int{} // a probe finding per rule pair: index in r.Looser
	addEx := func(field, what string, e *Example, probe bool) {
		k := field + "\x00" + e.Kind + "\x00" + e.Subject
		if probe && seen[k] {
			return
		}
		seen[k] = true
		g := field + "\x00" + e.NewRule + "\x00" + e.BoundaryRule
		if i, ok := group[g]; ok && (probe || r.Looser[i].What == what) {
			r.Looser[i].More++
			return
		}
		if _, ok := group[g]; !ok {
			group[g] = len(r.Looser)
		}
		r.Looser = append(r.Looser, Finding{Field: field, What: what, Example: e})
	}
	settings := CompareSettings(n, b)
	r.Looser = append(r.Looser, settings...)
	r.Looser = append(r.Looser, liftedHazards(n, b)...)
	var obs []obligation
	obs = append(obs, proveCommands(n, b)...)
	obs = append(obs, proveFiles(n, b, false)...)
	obs = append(obs, proveFiles(n, b, true)...)
	obs = append(obs, proveNetwork(n, b)...)
	for _, o := range obs {
		if o.probe == nil {
			r.Unproven = append(r.Unproven, Finding{Field: o.field, What: o.what + " (the proof could not finish)"})
			continue
		}
		r.Probes++
		if e, looser := exampleFor(n, b, *o.probe); looser {
			addEx(o.field, o.what, e, false)
			continue
		}
		if o.field == "commands.dynamic" || o.field == "sandbox.network" {
			continue // already a settings finding
		}
		r.Unproven = append(r.Unproven, Finding{Field: o.field, What: o.what + "; its witness is decided no looser by the full analysis: " + oneLine(o.probe.subject())})
	}
	probes := append(append(append(RuleProbes(n), RuleProbes(b)...), CorpusProbes()...), extra...)
	for _, pr := range probes {
		r.Probes++
		if e, looser := exampleFor(n, b, pr); looser {
			addEx(pr.field(), fmt.Sprintf("%s decides %s where the boundary's %s decides %s", orDefault(e.NewRule), e.New, orDefault(e.BoundaryRule), e.Boundary), e, true)
		}
	}
	r.Unproven = dropCovered(r.Unproven, r.Looser)
	if r.Looser == nil {
		r.Looser = []Finding{}
	}
	return r
}

func orDefault(rule string) string {
	if rule == "" {
		return "the policy"
	}
	return rule
}

// dropCovered removes unproven parts for which a counterexample of the
// same field was found anyway: the answer is already "no".
func dropCovered(unproven, looser []Finding) []Finding {
	fields := map[string]bool{}
	for _, f := range looser {
		if f.Example != nil {
			fields[f.Field] = true
		}
	}
	var out []Finding
	for _, f := range unproven {
		if !fields[f.Field] {
			out = append(out, f)
		}
	}
	return out
}
