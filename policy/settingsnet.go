package policy

import (
	"fmt"
	"slices"
	"strings"
)

// compareNetExtras lists how n's network.rules, network.passthrough,
// network.upstream_ca and secrets let out more than b's: a deny rule of b
// that n does not keep, a rule, tunnel or CA root n adds, a host secret n
// releases that b does not (or to more hosts).
func compareNetExtras(n, b *Policy) []Finding {
	var out []Finding
	add := func(field, format string, args ...any) {
		out = append(out, Finding{Field: field, What: fmt.Sprintf(format, args...)})
	}
	if netRank(n.Sandbox.Network) == 0 {
		return nil // nothing leaves the sandbox
	}
	texts := func(rs []*HTTPRule) []string {
		var t []string
		for _, r := range rs {
			t = append(t, r.Text)
		}
		return t
	}
	nt, bt := texts(n.net.rules), texts(b.net.rules)
	for i, r := range b.net.rules {
		if r.Action == Deny && !slices.Contains(nt, r.Text) {
			add("network.rules", "network.rules[%d] %s (deny) is not kept", i, r.Text)
		}
	}
	for _, r := range n.net.rules {
		if r.Action == Allow && !slices.Contains(bt, r.Text) {
			add("network.rules", "%s %s allows requests the boundary's rules do not", r.ID, r.Text)
		}
	}
	if !slices.Equal(nt, bt) && len(out) == 0 && len(bt) > 0 {
		add("network.rules", "the rules are ordered differently (first match wins): not proven")
	}
	bp := patterns(b.net.passthrough)
	for _, r := range n.net.passthrough {
		if !slices.Contains(bp, r.Pattern) {
			add("network.passthrough", "%s is tunnelled without interception (no network.rules, no secret checks)", r.Pattern)
		}
	}
	if n.net.upstreamCA != "" && n.net.upstreamCA != b.net.upstreamCA {
		add("network.upstream_ca", "trusts the extra roots in %s", n.net.upstreamCA)
	}
	for _, s := range n.secrets {
		i := slices.IndexFunc(b.secrets, func(x *Secret) bool { return x.Name == s.Name && x.From == s.From })
		hosts := patterns(s.Hosts)
		switch {
		case i < 0:
			add("secrets", "%s releases the host's %s to %s", s.Name, s.From, strings.Join(hosts, ", "))
		default:
			bh := patterns(b.secrets[i].Hosts)
			for _, h := range hosts {
				if !slices.Contains(bh, h) {
					add("secrets", "%s (%s) is also sent to %s", s.Name, s.From, h)
				}
			}
			if len(b.secrets[i].During) > 0 && !slices.Equal(s.DuringText(), b.secrets[i].DuringText()) {
				add("secrets", "%s is released during other calls than the boundary's (%s)", s.Name, strings.Join(s.DuringText(), ", "))
			}
		}
	}
	return out
}

func patterns(rs []NetRule) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Pattern)
	}
	return out
}
