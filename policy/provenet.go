package policy

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"

	"github.com/agentbox/agentbox/sandbox"
)

// netRank orders the network modes by what they let out.
func netRank(m sandbox.NetworkMode) int {
	switch m {
	case sandbox.NetworkNone, "":
		return 0
	case sandbox.NetworkProxy:
		return 1
	}
	return 2
}

// connectVerdict decides a connection to host:port as the sandbox would:
// nothing leaves with network none, everything with open, the proxy's
// rules with proxy (the address stage too when addr is set).
func (p *Policy) connectVerdict(hostport string, addr string) (Verdict, string) {
	switch netRank(p.Sandbox.Network) {
	case 0:
		return Deny, "sandbox.network"
	case 2:
		return Allow, "sandbox.network"
	}
	t, err := ParseNetTarget(hostport, 0)
	if err != nil {
		return Deny, "request"
	}
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(addr); err == nil {
		addrs = append(addrs, a)
	}
	d := p.NetworkDecision(t, addrs)
	return d.Verdict, d.Rule
}

// proveNetwork compares the network: the mode, then (both proxy) every
// name and port n allows, b allows too; IP and CIDR rules are compared by
// containment, with witness addresses.
func proveNetwork(n, b *Policy) []obligation {
	nr, br := netRank(n.Sandbox.Network), netRank(b.Sandbox.Network)
	switch {
	case nr == 0 || br == 2:
		return nil
	case nr > br:
		pr := Probe{Connect: "example.com:443", Source: "sandbox.network"}
		return []obligation{{field: "sandbox.network", what: fmt.Sprintf("network is %s (boundary: %s)", n.Sandbox.Network, b.Sandbox.Network), probe: &pr}}
	case nr == 2:
		return nil
	}
	var out []obligation
	ports := []int{443}
	for _, r := range append(append(append(append([]NetRule(nil), n.net.allow...), n.net.deny...), b.net.allow...), b.net.deny...) {
		if r.Port != 0 && !slices.Contains(ports, r.Port) {
			ports = append(ports, r.Port)
		}
	}
	ports = append(ports, 1)
	for _, port := range ports {
		ps := strconv.Itoa(port)
		nAllow, nDeny := hostsNFA(n.net.allow, port), hostsNFA(n.net.deny, port)
		for _, d := range b.net.deny {
			if d.IsIP() || (d.Port != 0 && d.Port != port) {
				continue
			}
			w, ok, complete := findString([]*nfa{nAllow, hostsNFA([]NetRule{d}, port)}, nDeny)
			out = netOb(out, w+":"+ps, ok, complete, fmt.Sprintf("%s %q is not kept", d.ID, d.Pattern), d.ID)
		}
		neg := hostsNFA(append(append([]NetRule(nil), n.net.deny...), b.net.allow...), port)
		for _, a := range n.net.allow {
			if a.IsIP() || (a.Port != 0 && a.Port != port) {
				continue
			}
			w, ok, complete := findString([]*nfa{hostsNFA([]NetRule{a}, port)}, neg)
			out = netOb(out, w+":"+ps, ok, complete, fmt.Sprintf("%s %q reaches past the boundary's network.allow", a.ID, a.Pattern), a.ID)
		}
	}
	// Addresses: a boundary deny by IP must be kept (any allowed name may
	// resolve there), and an allow by IP of n must be inside b's.
	for _, d := range b.net.deny {
		if d.IsIP() && len(n.net.allow) > 0 && !slices.ContainsFunc(n.net.deny, func(e NetRule) bool { return containsNet(e, d) }) {
			host := "example.com"
			if i := slices.IndexFunc(n.net.allow, func(r NetRule) bool { return !r.IsIP() }); i >= 0 {
				host = hostOf(n.net.allow[i])
			}
			pr := Probe{Connect: host + ":" + strconv.Itoa(portOr(d.Port, n.net.allow)), Addr: d.Prefix.Addr().String(), Source: d.ID}
			out = append(out, obligation{field: "network", what: fmt.Sprintf("%s %q is not kept", d.ID, d.Pattern), probe: &pr})
		}
	}
	for _, a := range n.net.allow {
		if a.IsIP() && !slices.ContainsFunc(b.net.allow, func(c NetRule) bool { return containsNet(c, a) }) {
			pr := Probe{Connect: bracket(a.Prefix.Addr()) + ":" + strconv.Itoa(portOr(a.Port, nil)), Source: a.ID}
			out = append(out, obligation{field: "network", what: fmt.Sprintf("%s %q reaches past the boundary's network.allow", a.ID, a.Pattern), probe: &pr})
		}
	}
	return out
}

func netOb(out []obligation, w string, ok, complete bool, what, source string) []obligation {
	o := obligation{field: "network", what: what}
	if ok {
		o.probe = &Probe{Connect: w, Source: source}
	} else if complete {
		return out
	}
	return append(out, o)
}

// containsNet reports whether IP rule c covers every address and port of
// IP rule a.
func containsNet(c, a NetRule) bool {
	return c.IsIP() && a.IsIP() && (c.Port == 0 || c.Port == a.Port) &&
		c.Prefix.Bits() <= a.Prefix.Bits() && c.Prefix.Contains(a.Prefix.Addr())
}

func portOr(p int, rules []NetRule) int {
	if p != 0 {
		return p
	}
	for _, r := range rules {
		if r.Port != 0 {
			return r.Port
		}
	}
	return 443
}

func hostOf(r NetRule) string {
	if r.Wild {
		return "x." + r.Host
	}
	return r.Host
}

// hostsNFA accepts the host names the name rules match on port.
func hostsNFA(rules []NetRule, port int) *nfa {
	n := &nfa{}
	for _, r := range rules {
		if r.IsIP() || (r.Port != 0 && r.Port != port) {
			continue
		}
		s := n.state()
		n.start = append(n.start, s)
		cur := s
		if r.Wild {
			in := n.state()
			n.anyEdge(s, in, ".:")
			n.anyEdge(in, in, ":")
			cur = n.lit(in, '.')
		}
		n.final[n.literal(cur, r.Host)] = true
	}
	return n
}
