package policy

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net/url"
	"os"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
	"gopkg.in/yaml.v3"
)

// HTTPRule is one entry of network.rules: requests to Hosts whose method
// is one of Methods (none: any) and whose path matches one of Paths (none:
// any) are allowed or denied. Rules are tried in order; the first match
// decides.
type HTTPRule struct {
	ID      string    // network.rules[2]
	Text    string    // the rule as written, in one line
	Hosts   []NetRule // host entries (network.allow syntax; a preset expands)
	Methods []string  // upper-case methods; empty = any
	Paths   []string  // doublestar globs over the URL path; empty = any
	Action  Verdict   // Allow or Deny
	// CaseSensitive matches paths byte for byte; by default a path and
	// the globs are compared in lower case (many upstreams, GitHub's
	// owner/repo among them, ignore case).
	CaseSensitive bool
}

// matchesHost reports whether t is one of the rule's hosts.
func (r *HTTPRule) matchesHost(t NetTarget) bool {
	for _, h := range r.Hosts {
		if h.MatchesTarget(t) {
			return true
		}
	}
	return false
}

// MatchesTarget reports whether the entry names t: an IP target matches IP
// and CIDR entries, a name matches host entries.
func (r NetRule) MatchesTarget(t NetTarget) bool {
	if t.IP.IsValid() {
		return r.matchesAddr(t.IP, t.Port)
	}
	return r.matchesName(t.Host, t.Port)
}

// matches reports whether the rule covers a request; norm is the path
// NormalizePath made.
func (r *HTTPRule) matches(t NetTarget, method, norm string) bool {
	if !r.matchesHost(t) {
		return false
	}
	if len(r.Methods) > 0 && !contains(r.Methods, method) {
		return false
	}
	if len(r.Paths) == 0 {
		return true
	}
	path := matchPath(norm, r.CaseSensitive)
	for _, p := range r.Paths {
		if ok, _ := doublestar.Match(rulePattern(p, r.CaseSensitive), path); ok {
			return true
		}
	}
	return false
}

// RequestDecision is the decision of network.rules on one HTTP request.
type RequestDecision struct {
	Verdict Verdict
	Rule    string // network.rules[i]; "" when no rule matched
	Text    string // the rule as written; "" when no rule matched
	Reason  string // one line
}

// DecideRequest decides one request to an allowed host: the first rule of
// network.rules that matches host, method and path decides; none matching
// allows. path is the URL path as sent (escaped, no query); it is matched
// as NormalizePath reads it, and one that stays ambiguous is denied when
// a rule names the host.
func (p *Policy) DecideRequest(t NetTarget, method, path string) RequestDecision {
	norm, err := NormalizePath(path)
	if err != nil {
		if p.HasRules(t) {
			return RequestDecision{Verdict: Deny, Rule: "request", Reason: fmt.Sprintf("%s %s%s refused: %v; network.rules cannot tell what the upstream will read, send the path normalised", method, t, path, err)}
		}
		return RequestDecision{Verdict: Allow, Reason: fmt.Sprintf("%s %s%s: allowed (no network.rules entry names the host)", method, t, path)}
	}
	path = norm
	for _, r := range p.net.rules {
		if r.matches(t, method, path) {
			d := RequestDecision{Verdict: r.Action, Rule: r.ID, Text: r.Text}
			d.Reason = fmt.Sprintf("%s %s%s: %s by %s %s", method, t, path, r.Action, r.ID, r.Text)
			return d
		}
	}
	return RequestDecision{Verdict: Allow, Reason: fmt.Sprintf("%s %s%s: allowed (no network.rules entry matches)", method, t, path)}
}

// HasRules reports whether any network.rules entry names t.
func (p *Policy) HasRules(t NetTarget) bool {
	for _, r := range p.net.rules {
		if r.matchesHost(t) {
			return true
		}
	}
	return false
}

// Intercepts reports whether the proxy must terminate TLS: the policy has
// network.rules or secrets.
func (p *Policy) Intercepts() bool { return len(p.net.rules) > 0 || len(p.secrets) > 0 }

// Passthrough reports whether t is listed in network.passthrough (a plain
// tunnel even when the proxy intercepts), and the entry.
func (p *Policy) Passthrough(t NetTarget) (NetRule, bool) {
	for _, r := range p.net.passthrough {
		if r.MatchesTarget(t) {
			return r, true
		}
	}
	return NetRule{}, false
}

// PassthroughRules returns network.passthrough.
func (p *Policy) PassthroughRules() []NetRule { return append([]NetRule(nil), p.net.passthrough...) }

// UpstreamCA is the path of network.upstream_ca ("" when unset).
func (p *Policy) UpstreamCA() string { return p.net.upstreamCA }

// httpRules loads network.rules.
func (l *loader) httpRules(f string, n *yaml.Node) []*HTTPRule {
	var out []*HTTPRule
	for i, it := range l.seq(f, n) {
		rf := fmt.Sprintf("%s[%d]", f, i)
		r := &HTTPRule{ID: rf}
		sawHost, sawAction, ok := false, false, true
		var text []string
		l.mapping(it, rf, map[string]func(string, *yaml.Node){
			"host": func(f string, v *yaml.Node) {
				sawHost = true
				s, good := l.str(f, v)
				if !good {
					ok = false
					return
				}
				hs, err := parseNetEntry(rf, s)
				if err != nil {
					l.errorf(v, f, "%q: %v", s, err)
					ok = false
					return
				}
				r.Hosts = hs
				text = append(text, "host: "+s)
			},
			"methods": func(f string, v *yaml.Node) {
				for j, mn := range l.seq(f, v) {
					mf := fmt.Sprintf("%s[%d]", f, j)
					m, good := l.str(mf, mn)
					if !good {
						ok = false
						continue
					}
					if !isMethod(m) {
						l.errorf(mn, mf, "%q is not an HTTP method; write it in upper case, like GET or POST", m)
						ok = false
						continue
					}
					r.Methods = append(r.Methods, m)
				}
				if len(r.Methods) > 0 {
					text = append(text, "methods: ["+strings.Join(r.Methods, ", ")+"]")
				}
			},
			"paths": func(f string, v *yaml.Node) {
				for j, pn := range l.seq(f, v) {
					pf := fmt.Sprintf("%s[%d]", f, j)
					s, good := l.str(pf, pn)
					if !good {
						ok = false
						continue
					}
					if !strings.HasPrefix(s, "/") || !doublestar.ValidatePattern(s) || strings.ContainsAny(s, "?#") {
						l.errorf(pn, pf, "%q: a path is a doublestar glob over the URL path starting with /, like /repos/me/** (no query)", s)
						ok = false
						continue
					}
					r.Paths = append(r.Paths, s)
				}
				if len(r.Paths) > 0 {
					text = append(text, "paths: ["+strings.Join(r.Paths, ", ")+"]")
				}
			},
			"case_sensitive": func(f string, v *yaml.Node) {
				if b, good := l.boolean(f, v); good {
					r.CaseSensitive = b
					if b {
						text = append(text, "case_sensitive: true")
					}
				} else {
					ok = false
				}
			},
			"action": func(f string, v *yaml.Node) {
				sawAction = true
				s, good := l.str(f, v)
				switch {
				case !good:
					ok = false
				case s == "allow":
					r.Action = Allow
				case s == "deny":
					r.Action = Deny
				default:
					l.errorf(v, f, "%q: want allow or deny", s)
					ok = false
				}
				text = append(text, "action: "+s)
			},
		})
		if it.Kind != yaml.MappingNode {
			continue
		}
		if !sawHost {
			l.errorf(it, rf+".host", "missing; name the host the rule applies to, like host: api.github.com")
			ok = false
		}
		if !sawAction {
			l.errorf(it, rf+".action", "missing; write action: allow or action: deny")
			ok = false
		}
		if ok {
			r.Text = "{" + strings.Join(text, ", ") + "}"
			out = append(out, r)
			l.netChecks = append(l.netChecks, netCheck{field: rf + ".host", node: it, hosts: r.Hosts})
		}
	}
	return out
}

func isMethod(m string) bool {
	if m == "" || len(m) > 20 {
		return false
	}
	for i := 0; i < len(m); i++ {
		if m[i] < 'A' || m[i] > 'Z' {
			return false
		}
	}
	return true
}

// upstreamCA checks network.upstream_ca: a readable PEM file with at least
// one certificate.
func (l *loader) upstreamCA(f string, n *yaml.Node) string {
	s, ok := l.str(f, n)
	if !ok {
		return ""
	}
	if l.host { // the file is on the host: checked by Load only
		if _, err := LoadCertPool(s); err != nil {
			l.errorf(n, f, "%v", err)
			return ""
		}
	}
	l.netChecks = append(l.netChecks, netCheck{field: f, node: n})
	return s
}

// LoadCertPool reads a PEM file of CA certificates.
func LoadCertPool(path string) ([]*x509.Certificate, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read %s: %v; name a readable PEM file of CA certificates", path, err)
	}
	var out []*x509.Certificate
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, fmt.Errorf("%s: bad certificate: %v", path, err)
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s holds no PEM certificate; name a PEM file of CA certificates", path)
	}
	return out, nil
}

// DecideNetRequest re-decides a recorded request (audit replay): the
// network.rules verdict on method and the recorded path (query ignored).
func (p *Policy) DecideNetRequest(host string, port int, method, path string) (decision, rule string) {
	t := NetTarget{Port: port}
	var err error
	if t.Host, t.IP, err = ParseNetHost(host); err != nil {
		return Deny.String(), "request"
	}
	u, err := url.Parse(path)
	if err != nil {
		return Deny.String(), "request"
	}
	d := p.DecideRequest(t, method, u.EscapedPath())
	return d.Verdict.String(), d.Rule
}
