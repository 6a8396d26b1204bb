package policy

import (
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"
)

// Suggestion is the least policy that allows what a set of observed
// actions did, layered on a base policy (see Suggest).
type Suggestion struct {
	Base     *Policy
	Allow    []SuggestedRule // command allow rules
	Ask      []SuggestedRule // the base's ask rules the actions met (kept asking)
	Reads    []SuggestedRule // files.read.allow globs
	Writes   []SuggestedRule // files.write.allow globs
	Hosts    []SuggestedRule // network.allow entries
	Decision []Undecided     // what the base refuses or asks by a rule: never suggested
}

// SuggestedRule is one rule and the actions that justify it.
type SuggestedRule struct {
	Match   string   `json:"match"`
	Sources []string `json:"sources"` // "FILE:LINE" of the audit lines
}

// Undecided is an observed action the suggestion does not allow: the base
// denies it (a built-in hazard rule) or asks about it by a rule, or no
// rule can express it (run-time command words).
type Undecided struct {
	What    string   `json:"what"`
	Rule    string   `json:"rule"`
	Verdict Verdict  `json:"decision"`
	Sources []string `json:"sources"`
}

// obs collects the observations of one kind, keyed by what was seen.
type obs struct {
	argvs   map[string][]string // joined argv -> argv
	sources map[string][]string
}

func newObs() *obs { return &obs{argvs: map[string][]string{}, sources: map[string][]string{}} }

func (o *obs) add(argv []string, src string) {
	k := strings.Join(argv, "\x00")
	o.argvs[k] = argv
	if src != "" && !slices.Contains(o.sources[k], src) {
		o.sources[k] = append(o.sources[k], src)
	}
}

// Suggest derives the least policy on base that allows the observed
// actions that ran (probes, as read from audit logs, with Ran set: a call
// the policy or a person refused teaches nothing): command allow rules by
// program and subcommand, as specific as the observations (see
// generalise), file globs collapsed by directory only where two or more
// files of a directory were seen and generated trees (.git/objects,
// virtual environments, node_modules, __pycache__) as one glob each, and
// the hosts connected to. Only what the base allows is allowed, so the
// suggestion stays within its base: what the base denies (its built-in
// hazards) or asks about, by a rule or by default, is listed in Decision.
// The base's deny rules, file deny globs, network deny rules, sandbox and
// audit settings are kept; commands no rule names are denied.
func Suggest(base *Policy, probes []Probe) *Suggestion {
	s := &Suggestion{Base: base}
	cmds, reads, writes, hosts := newObs(), newObs(), newObs(), newObs()
	asks := map[string][]string{}
	undecided := map[string]*Undecided{}
	refuse := func(what, rule string, v Verdict, src string) {
		u := undecided[what+"\x00"+rule]
		if u == nil {
			u = &Undecided{What: what, Rule: rule, Verdict: v}
			undecided[what+"\x00"+rule] = u
		}
		if src != "" && !slices.Contains(u.Sources, src) {
			u.Sources = append(u.Sources, src)
		}
	}
	file := func(p string, write bool, src string) {
		d := base.decideFile(p, write)
		rel := relPath(unalias(p))
		switch {
		case d.Verdict == Allow:
			if write {
				writes.add([]string{rel}, src)
			} else {
				reads.add([]string{rel}, src)
			}
		default:
			refuse(fmt.Sprintf("%s %s", map[bool]string{false: "read", true: "write"}[write], rel), d.Rule, d.Verdict, src)
		}
	}
	for _, pr := range probes {
		if !pr.Ran {
			continue // refused (or never executed): nothing to learn from it
		}
		switch {
		case pr.Connect != "":
			if v, rule := base.connectVerdict(pr.Connect, pr.Addr); v == Allow {
				hosts.add([]string{pr.Connect}, pr.Source)
			} else {
				refuse("connect "+pr.Connect, rule, v, pr.Source)
			}
		case pr.Action.Kind == Read || pr.Action.Kind == Write:
			file(pr.Action.Path, pr.Action.Kind == Write, pr.Source)
		case pr.Action.Kind == Command:
			a := base.analyse(pr.Action.Command)
			for i, pt := range a.parts {
				cl := a.lines[i]
				switch {
				case cl != nil && pt.Verdict == Allow && len(cl.words) > 0 && cl.words[0].kind == wStatic:
					cmds.add(ruleArgv(cl), pr.Source)
				case cl != nil && pt.Verdict == Ask:
					asks[pt.Rule] = appendNew(asks[pt.Rule], pr.Source)
					refuse("`"+strings.Join(pt.Argv, " ")+"`", pt.Rule, pt.Verdict, pr.Source)
				case cl == nil && strings.HasPrefix(pt.Rule, "files."):
					// a redirection or a file a command names: below
				case pt.Verdict != Allow:
					refuse("`"+strings.Join(pt.Argv, " ")+"`", pt.Rule, pt.Verdict, pr.Source)
				}
			}
			for _, r := range a.redirs {
				dir := workspace
				if len(r.dirs) > 0 {
					dir = r.dirs[0]
				} else if len(a.cwds) > 0 {
					dir = a.cwds[0]
				}
				t := unalias(r.target)
				if !path.IsAbs(t) {
					t = path.Join(dir, t)
				}
				if checkPath(t) == "" {
					file(t, r.write, pr.Source)
				}
			}
		}
	}
	s.Allow = generaliseCommands(cmds)
	s.Reads = collapseFiles(reads)
	s.Writes = collapseFiles(writes)
	s.Hosts = exact(hosts)
	for _, r := range base.cmd.lists[Ask] {
		if src, ok := asks[r.id]; ok {
			s.Ask = append(s.Ask, SuggestedRule{Match: r.match, Sources: src})
		}
	}
	for _, u := range undecided {
		s.Decision = append(s.Decision, *u)
	}
	sort.Slice(s.Decision, func(i, j int) bool { return s.Decision[i].What < s.Decision[j].What })
	return s
}

func appendNew(xs []string, s string) []string {
	if s == "" || slices.Contains(xs, s) {
		return xs
	}
	return append(xs, s)
}

// ruleArgv is the argv of a command line as rule words, up to the first
// word known only at run time (an allow rule cannot vouch for it); the
// program is its basename.
func ruleArgv(cl *cmdline) []string {
	var out []string
	for i, w := range cl.words {
		switch {
		case w.kind != wStatic:
			return out
		case i == 0:
			out = append(out, path.Base(w.text))
		default:
			out = append(out, w.text)
		}
	}
	return out
}
