package policy

import (
	"strings"

	"github.com/agentbox/agentbox/sandbox"
	"gopkg.in/yaml.v3"
)

// netCheck is a network field that depends on others: checked once the
// whole policy is loaded.
type netCheck struct {
	field  string
	node   *yaml.Node
	hosts  []NetRule // entries that must be reachable (rules, secret hosts)
	secret bool      // the entries name a secret's destinations
}

// checkNetwork checks network.rules, network.upstream_ca and secrets
// against the rest: they need network: proxy, and every host they name
// must be one network.allow allows (and, for a secret, not a passthrough
// host, where the proxy never sees the request).
func (l *loader) checkNetwork(p *Policy) {
	for _, c := range l.netChecks {
		if p.Sandbox.Network != sandbox.NetworkProxy {
			if c.secret {
				continue // said once, for secrets:
			}
			l.errorf(c.node, c.field, "needs sandbox.network: proxy (it is %q): only the proxy can apply it", orNoneMode(p.Sandbox.Network))
			continue
		}
		for _, h := range c.hosts {
			if why := p.unreachable(h, c.secret); why != "" {
				l.errorf(c.node, c.field, "%q cannot match: %s", h.Pattern, why)
			}
		}
	}
}

func orNoneMode(m sandbox.NetworkMode) string {
	if m == "" {
		return string(sandbox.NetworkNone)
	}
	return string(m)
}

// unreachable says why no request to an entry's hosts can pass the
// proxy's name stage ("" when some can).
func (p *Policy) unreachable(h NetRule, secret bool) string {
	for _, d := range p.net.deny {
		if covers(d, h) {
			return "network.deny " + quote(d.Pattern) + " refuses every host it names"
		}
	}
	if secret {
		for _, d := range p.net.passthrough {
			if covers(d, h) {
				return "network.passthrough " + quote(d.Pattern) + " tunnels it unseen, so no secret can be sent there"
			}
		}
	}
	for _, a := range p.net.allow {
		if netOverlaps(a, h) {
			return ""
		}
	}
	return "no network.allow entry allows it; add it there"
}

func quote(s string) string { return `"` + s + `"` }

func portsOverlap(a, b NetRule) bool { return a.Port == 0 || b.Port == 0 || a.Port == b.Port }

// netOverlaps reports whether some target matches both entries.
func netOverlaps(a, b NetRule) bool {
	if !portsOverlap(a, b) || a.IsIP() != b.IsIP() {
		return false
	}
	if a.IsIP() {
		return a.Prefix.Overlaps(b.Prefix)
	}
	switch {
	case !a.Wild && !b.Wild:
		return a.Host == b.Host
	case a.Wild && !b.Wild:
		return strings.HasSuffix(b.Host, "."+a.Host)
	case !a.Wild && b.Wild:
		return strings.HasSuffix(a.Host, "."+b.Host)
	}
	return a.Host == b.Host || strings.HasSuffix(a.Host, "."+b.Host) || strings.HasSuffix(b.Host, "."+a.Host)
}

// covers reports whether every target matching x matches a.
func covers(a, x NetRule) bool {
	if (a.Port != 0 && a.Port != x.Port) || a.IsIP() != x.IsIP() {
		return false
	}
	if a.IsIP() {
		return a.Prefix.Bits() <= x.Prefix.Bits() && a.Prefix.Contains(x.Prefix.Addr())
	}
	switch {
	case !a.Wild:
		return !x.Wild && a.Host == x.Host
	case !x.Wild:
		return strings.HasSuffix(x.Host, "."+a.Host)
	}
	return x.Host == a.Host || strings.HasSuffix(x.Host, "."+a.Host)
}
