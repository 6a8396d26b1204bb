package policy

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"

	"gopkg.in/yaml.v3"
)

// netRules is the policy's network: block.
type netRules struct {
	allow, deny []NetRule
	passthrough []NetRule   // network.passthrough: plain tunnels, never intercepted
	rules       []*HTTPRule // network.rules: method/path rules, first match wins
	upstreamCA  string      // network.upstream_ca: extra roots for upstream TLS
}

// NetRule is one entry of network.allow or network.deny: a host (with an
// optional leading "*." that matches every subdomain, not the domain
// itself), or an IP address or CIDR; Port 0 means any port.
type NetRule struct {
	ID      string // field path, like network.allow[2]
	Pattern string // the entry as written
	Host    string // canonical name, without "*."; "" for an IP rule
	Wild    bool   // Host matches subdomains only
	Prefix  netip.Prefix
	Port    int
}

// IsIP reports whether the rule names addresses (an IP or CIDR).
func (r NetRule) IsIP() bool { return r.Prefix.IsValid() }

// ParseNetRule parses one network entry: host[:port] with an optional
// leading "*.", or an IP or CIDR with an optional port (IPv6 in brackets
// when a port follows).
func ParseNetRule(s string) (NetRule, error) {
	r := NetRule{Pattern: s}
	switch {
	case s == "":
		return r, errors.New("empty entry; write a host, IP or CIDR, like pypi.org or 10.0.0.0/8")
	case strings.Contains(s, "://"):
		return r, errors.New("no scheme here; write the host alone, like pypi.org or github.com:443")
	}
	h, p, err := splitHostPort(s)
	if err != nil {
		return r, fmt.Errorf("%v; write host[:port], IP[:port] or CIDR[:port] ([v6]:port for IPv6)", err)
	}
	if p != "" {
		if r.Port, err = ParsePort(p); err != nil {
			return r, err
		}
	}
	bare := strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
	if strings.Contains(bare, "/") {
		pfx, err := netip.ParsePrefix(bare)
		if err != nil || pfx.Addr().Zone() != "" {
			return r, errors.New("no path here; write a host, IP or CIDR like 10.0.0.0/8 (a URL path cannot be matched: the proxy sees only host and port)")
		}
		if _, _, err := ParseNetHost(bracket(pfx.Addr())); err != nil {
			return r, fmt.Errorf("CIDR address: %v", err)
		}
		if pfx.Masked() != pfx {
			return r, fmt.Errorf("host bits set in %s; did you mean %s?", bare, pfx.Masked())
		}
		r.Prefix = pfx
		return r, nil
	}
	if strings.HasPrefix(h, "*.") {
		r.Wild, h = true, h[2:]
	}
	host, ip, err := ParseNetHost(h)
	if err != nil {
		return r, err
	}
	if ip.IsValid() {
		if r.Wild {
			return r, errors.New("*. applies to names, not IP addresses; use a CIDR")
		}
		r.Prefix = netip.PrefixFrom(ip, ip.BitLen())
		return r, nil
	}
	if r.Wild && !strings.Contains(host, ".") {
		return r, fmt.Errorf("*.%s would match a whole top-level domain; name the domain, like *.example.com", host)
	}
	r.Host = host
	return r, nil
}

func bracket(a netip.Addr) string {
	if a.Is6() {
		return "[" + a.String() + "]"
	}
	return a.String()
}

func (r NetRule) matchesName(host string, port int) bool {
	if r.Host == "" || (r.Port != 0 && r.Port != port) {
		return false
	}
	if r.Wild {
		return strings.HasSuffix(host, "."+r.Host)
	}
	return host == r.Host
}

func (r NetRule) matchesAddr(a netip.Addr, port int) bool {
	return r.Prefix.IsValid() && (r.Port == 0 || r.Port == port) && r.Prefix.Contains(a.Unmap())
}

// network loads the network: block.
func (l *loader) network(f string, n *yaml.Node, dst *netRules) {
	l.mapping(n, f, map[string]func(string, *yaml.Node){
		"allow":       func(f string, v *yaml.Node) { dst.allow = l.netRules(f, v) },
		"deny":        func(f string, v *yaml.Node) { dst.deny = l.netRules(f, v) },
		"passthrough": func(f string, v *yaml.Node) { dst.passthrough = l.netRules(f, v) },
		"rules":       func(f string, v *yaml.Node) { dst.rules = l.httpRules(f, v) },
		"upstream_ca": func(f string, v *yaml.Node) { dst.upstreamCA = l.upstreamCA(f, v) },
	})
}

func (l *loader) netRules(f string, n *yaml.Node) []NetRule {
	var out []NetRule
	for i, it := range l.seq(f, n) {
		rf := fmt.Sprintf("%s[%d]", f, i)
		s, ok := l.str(rf, it)
		if !ok {
			continue
		}
		rs, err := parseNetEntry(rf, s)
		if err != nil {
			l.errorf(it, rf, "%q: %v", s, err)
			continue
		}
		out = append(out, rs...)
	}
	return out
}

// NetDecision is the policy's decision on one connection attempt.
type NetDecision struct {
	Verdict Verdict `json:"decision"` // Allow or Deny
	Reason  string  `json:"reason"`   // one line, names the rule
	Rule    string  `json:"rule,omitempty"`
	Pattern string  `json:"pattern,omitempty"`
	Target  string  `json:"target"`
	Address string  `json:"address,omitempty"` // the resolved address judged, if any
	Class   string  `json:"class,omitempty"`   // its special range, like loopback
}

func netDeny(t, rule, pattern, format string, args ...any) NetDecision {
	return NetDecision{Verdict: Deny, Target: t, Rule: rule, Pattern: pattern,
		Reason: t + " refused: " + fmt.Sprintf(format, args...)}
}

// NetworkRules returns copies of network.allow and network.deny.
func (p *Policy) NetworkRules() (allow, deny []NetRule) {
	return append([]NetRule(nil), p.net.allow...), append([]NetRule(nil), p.net.deny...)
}

// DecideConnect decides the name stage of a connection to t: network.deny,
// then network.allow, on the host as given (a name matches host rules, an
// IP literal matches IP and CIDR rules). An allowed name must then have
// every address it resolves to pass DecideAddress.
func (p *Policy) DecideConnect(t NetTarget) NetDecision {
	ts := t.String()
	match := func(r NetRule) bool {
		if t.IP.IsValid() {
			return r.matchesAddr(t.IP, t.Port)
		}
		return r.matchesName(t.Host, t.Port)
	}
	for _, r := range p.net.deny {
		if match(r) {
			return netDeny(ts, r.ID, r.Pattern, "matched %s %q", r.ID, r.Pattern)
		}
	}
	for _, r := range p.net.allow {
		if match(r) {
			return NetDecision{Verdict: Allow, Target: ts, Rule: r.ID, Pattern: r.Pattern,
				Reason: fmt.Sprintf("%s allowed by %s %q", ts, r.ID, r.Pattern)}
		}
	}
	if len(p.net.allow) == 0 {
		return netDeny(ts, "network.allow", "", "not in network.allow (it is empty)")
	}
	return netDeny(ts, "network.allow", "", "not in network.allow")
}

// DecideAddress decides one address that t resolved to (or t's own IP):
// an IP or CIDR rule of network.deny refuses it; an address in a special
// range (loopback, private, link-local, CGNAT, unique-local, multicast,
// unspecified, broadcast, cloud metadata) is refused unless an IP or CIDR
// rule of network.allow names it. A is judged unmapped (::ffff:a.b.c.d is
// a.b.c.d).
func (p *Policy) DecideAddress(t NetTarget, a netip.Addr) NetDecision {
	ts, a := t.String(), a.Unmap()
	as := a.String()
	for _, r := range p.net.deny {
		if r.matchesAddr(a, t.Port) {
			d := netDeny(ts, r.ID, r.Pattern, "resolves to %s, matched %s %q", as, r.ID, r.Pattern)
			d.Address = as
			return d
		}
	}
	class := AddressClass(a)
	if class == "" && !t.IP.IsValid() && IsMetadataName(t.Host) {
		class = "cloud metadata"
	}
	if class == "" {
		return NetDecision{Verdict: Allow, Target: ts, Address: as, Reason: ts + " resolves to " + as}
	}
	for _, r := range p.net.allow {
		if r.matchesAddr(a, t.Port) {
			return NetDecision{Verdict: Allow, Target: ts, Address: as, Class: class, Rule: r.ID, Pattern: r.Pattern,
				Reason: fmt.Sprintf("%s resolves to %s (%s), allowed by %s %q", ts, as, class, r.ID, r.Pattern)}
		}
	}
	d := netDeny(ts, "network.allow", "", "resolves to %s (%s) and no IP rule allows it", as, class)
	d.Address, d.Class = as, class
	return d
}

// NetworkDecision is the whole decision on a connection to t whose name
// resolved to addrs (ignored for an IP literal, which is its own address):
// the name stage, then every address; the first refusal decides.
func (p *Policy) NetworkDecision(t NetTarget, addrs []netip.Addr) NetDecision {
	d := p.DecideConnect(t)
	if d.Verdict != Allow {
		return d
	}
	if t.IP.IsValid() {
		addrs = []netip.Addr{t.IP}
	}
	for _, a := range addrs {
		if ad := p.DecideAddress(t, a); ad.Verdict != Allow {
			return ad
		}
	}
	if t.IP.IsValid() {
		d.Address = t.IP.String()
	}
	return d
}

// DecideNet re-decides a recorded net event (audit replay): host, port and
// the address it resolved to ("" or unparsable: the name stage only).
func (p *Policy) DecideNet(host string, port int, addr string) (decision, rule string) {
	t := NetTarget{Port: port}
	var err error
	if t.Host, t.IP, err = ParseNetHost(host); err != nil || port < 1 || port > 65535 {
		return Deny.String(), "request"
	}
	var addrs []netip.Addr
	if ap, err := netip.ParseAddrPort(addr); err == nil {
		addrs = append(addrs, ap.Addr())
	} else if a, err := netip.ParseAddr(addr); err == nil {
		addrs = append(addrs, a)
	}
	d := p.NetworkDecision(t, addrs)
	return d.Verdict.String(), d.Rule
}
