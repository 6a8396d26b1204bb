package policy

import (
	_ "embed"
	"net/netip"
	"sort"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Probe is one concrete action the counterexample search decides under
// two policies: a command or file access (Action), or a connection
// (Connect "host:port", with Addr the address it resolved to, if known).
// Source says where it came from: a rule, "corpus", or "FILE:LINE" of an
// audit log.
//
// A probe read from an audit log also says whether the action ran (Ran:
// allowed and executed, or recorded as would_ask/would_deny by a learning
// run), in which session and when: policy suggest learns only from what
// ran.
type Probe struct {
	Action  Action
	Connect string
	Addr    string
	Source  string
	Ran     bool
	Session string
	Time    time.Time
}

// The public security corpus and the policy's own cases, embedded so that
// the counterexample search has them wherever agentbox runs.
var (
	//go:embed testdata/corpus/cases.yaml
	corpusCases []byte
	//go:embed testdata/cases.yaml
	ownCases []byte
)

// CorpusProbes returns the actions of the public corpus and of the
// policy's own security cases.
func CorpusProbes() []Probe {
	var out []Probe
	for _, data := range [][]byte{corpusCases, ownCases} {
		var f struct {
			Cases []struct {
				Command, Read, Write string
			} `yaml:"cases"`
		}
		if yaml.Unmarshal(data, &f) != nil {
			continue
		}
		for _, c := range f.Cases {
			switch {
			case c.Command != "":
				out = append(out, Probe{Action: Action{Kind: Command, Command: c.Command}, Source: "corpus"})
			case c.Read != "":
				out = append(out, Probe{Action: Action{Kind: Read, Path: c.Read}, Source: "corpus"})
			case c.Write != "":
				out = append(out, Probe{Action: Action{Kind: Write, Path: c.Write}, Source: "corpus"})
			}
		}
	}
	return out
}

// RuleProbes returns actions drawn from p's rules: each command rule with
// its globs filled in (with and without one more argument), each file glob
// filled in, as read and as write, each network rule as a connection, and
// the options that turn an allowed command destructive.
func RuleProbes(p *Policy) []Probe {
	var out []Probe
	cmd := func(s, src string) {
		out = append(out, Probe{Action: Action{Kind: Command, Command: s}, Source: src})
	}
	for v := range p.cmd.lists {
		for _, r := range p.cmd.lists[v] {
			words := make([]string, len(r.words))
			for i, w := range r.words {
				words[i] = strings.ReplaceAll(w, "*", "x")
			}
			cmd(quoteArgv(words), r.id)
			cmd(quoteArgv(append(words, "x")), r.id)
		}
	}
	keys := make([]string, 0, len(destructive))
	for k := range destructive {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		for _, o := range destructive[k] {
			cmd(k+" "+o, "destructive options")
			cmd(k+" "+o+" x", "destructive options")
		}
	}
	for _, s := range []string{"bash x.sh", "sh x.sh", "bash scripts/x.sh", "$CMD", "unlisted-program x"} {
		cmd(s, "rule probes")
	}
	for i, list := range [][]string{p.read.allow, p.read.deny, p.write.allow, p.write.deny} {
		for _, g := range list {
			path := fillGlob(g)
			src := [...]string{"files.read.allow", "files.read.deny", "files.write.allow", "files.write.deny"}[i]
			out = append(out, Probe{Action: Action{Kind: Read, Path: path}, Source: src},
				Probe{Action: Action{Kind: Write, Path: path}, Source: src})
		}
	}
	for _, r := range append(append([]NetRule(nil), p.net.allow...), p.net.deny...) {
		port := strconv.Itoa(portOr(r.Port, nil))
		if r.IsIP() {
			out = append(out, Probe{Connect: bracket(r.Prefix.Addr()) + ":" + port, Source: r.ID})
			continue
		}
		out = append(out, Probe{Connect: hostOf(r) + ":" + port, Source: r.ID})
		out = append(out, Probe{Connect: hostOf(r) + ":" + port, Addr: netip.MustParseAddr("10.0.0.1").String(), Source: r.ID})
	}
	return out
}

// fillGlob turns a glob into one path it matches.
func fillGlob(g string) string {
	if alts, ok := expandBraces(g, 64); ok && len(alts) > 0 {
		g = alts[0]
	}
	g = strings.ReplaceAll(g, "**", "x")
	g = strings.ReplaceAll(g, "*", "x")
	g = strings.ReplaceAll(g, "?", "x")
	return g
}
