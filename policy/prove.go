package policy

import (
	"fmt"
	"slices"
	"strings"
)

// obligation is one part of the proof that NEW stays within a boundary
// that did not go through: a witness to confirm by deciding it under both
// policies, or none when the search could not finish.
type obligation struct {
	field, what string
	probe       *Probe // nil: the search gave up
}

// proveCommands compares the command rules of n and b over every static
// argv, exactly (rule automata): for v in allow and ask, no argv that n
// decides v or less is decided more strictly by b. Each boundary rule of
// a stricter verdict that n does not keep, and each rule of n that lets
// through what b leaves to a stricter default, yields a witness.
func proveCommands(n, b *Policy) []obligation {
	var out []obligation
	nc, bc := &n.cmd, &b.cmd
	if hasNUL(nc) || hasNUL(bc) {
		return []obligation{{field: "commands", what: "a rule holds a NUL byte, which the proof does not model"}}
	}
	for _, v := range []Verdict{Allow, Ask} {
		nLE, nGT := splitRules(nc, v)
		bLE, bGT := splitRules(bc, v)
		pos := argvShape()
		for _, r := range bGT {
			if coveredBy(r, nGT) {
				continue
			}
			p := pos
			if nc.def > v {
				p = rulesNFA(sameProgram(nLE, r))
			}
			w, ok, complete := findString([]*nfa{p, rulesNFA([]*rule{r})}, rulesNFA(sameProgram(nGT, r)))
			what := fmt.Sprintf("%s %q (%s) is not kept", r.id, r.match, r.verdict)
			out = addOb(out, commandObligation(w, ok, complete, what, r.id))
		}
		if bc.def <= v {
			continue
		}
		negRules := append(append([]*rule(nil), nGT...), bLE...)
		if nc.def <= v {
			negN := rulesNFA(negRules)
			w, ok, complete := "unlisted-program\x00x", true, true
			if negN.matches(w) {
				w, ok, complete = findString([]*nfa{argvShape()}, negN)
			}
			what := fmt.Sprintf("commands.default is %s (boundary: %s)", nc.def, bc.def)
			out = addOb(out, commandObligation(w, ok, complete, what, "commands.default"))
			continue
		}
		for _, r := range nLE {
			if coveredBy(r, nGT) || coveredBy(r, bLE) {
				continue
			}
			w, ok, complete := findString([]*nfa{rulesNFA([]*rule{r})}, rulesNFA(sameProgram(negRules, r)))
			what := fmt.Sprintf("%s %q (%s) covers commands the boundary decides %s", r.id, r.match, r.verdict, bc.def)
			out = addOb(out, commandObligation(w, ok, complete, what, r.id))
		}
	}
	if nc.dynamic < bc.dynamic {
		pr := Probe{Action: Action{Kind: Command, Command: "$CMD"}, Source: "commands.dynamic"}
		out = append(out, obligation{field: "commands.dynamic", what: fmt.Sprintf("commands.dynamic is %s (boundary: %s)", nc.dynamic, bc.dynamic), probe: &pr})
	}
	return out
}

func commandObligation(w string, ok, complete bool, what, source string) obligation {
	o := obligation{field: "commands", what: what}
	switch {
	case ok:
		pr := Probe{Action: Action{Kind: Command, Command: quoteArgv(strings.Split(w, "\x00"))}, Source: source}
		o.probe = &pr
	case complete:
		return obligation{} // proven
	}
	return o
}

func hasNUL(c *commandRules) bool {
	for _, l := range c.lists {
		for _, r := range l {
			if strings.IndexByte(r.match, 0) >= 0 {
				return true
			}
		}
	}
	return false
}

// sameProgram keeps the rules that may match a command line r matches:
// all but those whose first word is a different plain name (no '*', no
// '/'), which match no argv r matches.
func sameProgram(rules []*rule, r *rule) []*rule {
	if len(r.words) == 0 || strings.ContainsAny(r.words[0], "*/") {
		return rules
	}
	var out []*rule
	for _, x := range rules {
		if len(x.words) == 0 || x.words[0] == r.words[0] || strings.ContainsAny(x.words[0], "*/") {
			out = append(out, x)
		}
	}
	return out
}

// coveredBy reports whether one of rules matches every argv r matches:
// it has no more words and each of its words matches all r's word does.
func coveredBy(r *rule, rules []*rule) bool {
	for _, x := range rules {
		if len(x.words) > len(r.words) {
			continue
		}
		ok := true
		for i, w := range x.words {
			if !wordCovers(w, r.words[i]) {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

// wordCovers reports whether rule word w matches every string rule word v
// matches.
func wordCovers(w, v string) bool {
	if w == v || strings.Trim(w, "*") == "" && w != "" {
		return true
	}
	if !strings.Contains(v, "*") {
		return globMatch(w, v)
	}
	a, b := &nfa{}, &nfa{}
	sa, sb := a.state(), b.state()
	a.start, b.start = []int32{sa}, []int32{sb}
	a.final[a.addWord(sa, v, "\x00")] = true
	b.final[b.addWord(sb, w, "\x00")] = true
	_, found, complete := findString([]*nfa{a}, b)
	return !found && complete
}

func addOb(out []obligation, o obligation) []obligation {
	if o.field == "" {
		return out
	}
	return append(out, o)
}

func splitRules(c *commandRules, v Verdict) (le, gt []*rule) {
	for vv := range c.lists {
		for _, r := range c.lists[vv] {
			if Verdict(vv) <= v {
				le = append(le, r)
			} else {
				gt = append(gt, r)
			}
		}
	}
	return le, gt
}

func rulesNFA(rules []*rule) *nfa {
	n := &nfa{}
	for _, r := range rules {
		n.addRule(r.words)
	}
	return n
}

// proveFiles compares one file list (files.read, or files.write with write
// set): every path n allows, b allows too. Each boundary deny glob n does
// not keep, and each allow glob of n reaching past b's allow globs, yields
// a witness path.
func proveFiles(n, b *Policy, write bool) []obligation {
	nr, br, list, kind := n.read, b.read, "files.read", Read
	if write {
		nr, br, list, kind = n.write, b.write, "files.write", Write
	}
	var out []obligation
	nAllow, err1 := globsNFA(nr.allow)
	nDeny, err2 := globsNFA(nr.deny)
	_, err3 := globsNFA(br.allow)
	if err1 != nil || err2 != nil || err3 != nil {
		return []obligation{{field: list, what: "a glob uses a character class ([...]), which the proof does not model"}}
	}
	fileOb := func(w string, ok, complete bool, what, source string) {
		o := obligation{field: list, what: what}
		if ok {
			o.probe = &Probe{Action: Action{Kind: kind, Path: w[1:]}, Source: source}
		} else if complete {
			return
		}
		out = append(out, o)
	}
	for i, d := range br.deny {
		if slices.Contains(nr.deny, d) {
			continue
		}
		dn, err := globsNFA([]string{d})
		if err != nil {
			out = append(out, obligation{field: list, what: fmt.Sprintf("%s.deny[%d] %q uses a character class, which the proof does not model", list, i, d)})
			continue
		}
		w, ok, complete := findString([]*nfa{cleanPaths(), nAllow, dn}, nDeny)
		fileOb(w, ok, complete, fmt.Sprintf("%s.deny[%d] %q is not kept", list, i, d), fmt.Sprintf("%s.deny[%d]", list, i))
	}
	neg, _ := globsNFA(append(append([]string(nil), nr.deny...), br.allow...))
	for i, a := range nr.allow {
		if slices.Contains(br.allow, a) {
			continue
		}
		an, _ := globsNFA([]string{a})
		w, ok, complete := findString([]*nfa{cleanPaths(), an}, neg)
		fileOb(w, ok, complete, fmt.Sprintf("%s.allow[%d] %q reaches past the boundary's allow globs", list, i, a), fmt.Sprintf("%s.allow[%d]", list, i))
	}
	return out
}

// cleanPaths accepts the path keys of clean paths: no empty component, no
// trailing slash (relative ones do not start with one).
func cleanPaths() *nfa {
	n := &nfa{}
	s := n.state()
	n.start = []int32{s}
	rel, abs := n.lit(s, 'R'), n.lit(n.lit(s, 'A'), '/')
	n.final[abs] = true
	for _, from := range []int32{rel, abs} {
		// a component: not empty, not "." or ".."
		ok, d1, d2 := n.state(), n.state(), n.state()
		n.anyEdge(from, ok, "/.")
		n.edges[from] = append(n.edges[from], nedge{c: '.', to: d1})
		n.anyEdge(d1, ok, "/.")
		n.edges[d1] = append(n.edges[d1], nedge{c: '.', to: d2})
		n.anyEdge(d2, ok, "/")
		n.anyEdge(ok, ok, "/")
		n.final[ok] = true
		for _, q := range []int32{ok, d1, d2} {
			n.edges[q] = append(n.edges[q], nedge{c: '/', to: from})
		}
		n.edges[d1] = n.edges[d1][:len(n.edges[d1])-1]
		n.edges[d2] = n.edges[d2][:len(n.edges[d2])-1]
		n.edges[ok] = append(n.edges[ok], nedge{c: '/', to: from})
	}
	return n
}

func globsNFA(globs []string) (*nfa, error) {
	n := &nfa{}
	for _, g := range globs {
		if err := n.addGlob(g); err != nil {
			return nil, err
		}
	}
	return n, nil
}
