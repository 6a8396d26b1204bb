package agent

import (
	"context"
	"crypto/rand"
	"crypto/x509"
	"encoding/hex"
	"fmt"
	"maps"
	"strings"

	"github.com/agentbox/agentbox/netproxy"
	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/sandbox"
)

// PlaceholderPrefix starts every placeholder the sandbox holds in place of
// a secret; the rest is random per session.
const PlaceholderPrefix = "agentbox-secret-"

// startBroker reads the policy's secrets on the host, makes a placeholder
// for each and a session CA, and builds the broker. It returns the
// sandbox's variables (placeholders and the CA bundle's) and the CA
// certificate it must trust.
func (e *Egress) startBroker(ctx context.Context, session string) (map[string]string, []byte, error) {
	p := e.Policy
	roots, err := x509.SystemCertPool()
	if err != nil || roots == nil {
		roots = x509.NewCertPool()
	}
	if path := p.UpstreamCA(); path != "" {
		certs, err := policy.LoadCertPool(path)
		if err != nil {
			return nil, nil, fmt.Errorf("network.upstream_ca: %w", err)
		}
		for _, c := range certs {
			roots.AddCert(c)
		}
	}
	ca, err := netproxy.NewCA(session)
	if err != nil {
		return nil, nil, err
	}
	env := maps.Clone(sandbox.TrustEnv())
	b := &netproxy.Broker{CA: ca, Rules: p, Roots: roots, Call: e.current}
	for _, s := range p.Secrets() {
		v, err := s.Resolve(ctx)
		if err != nil {
			return nil, nil, err
		}
		ph, err := placeholder()
		if err != nil {
			return nil, nil, err
		}
		b.Secrets = append(b.Secrets, netproxy.Secret{Spec: s, Placeholder: ph, Value: v})
		env[s.Name] = ph
	}
	e.broker = b
	return env, ca.CertPEM(), nil
}

func placeholder() (string, error) {
	var r [16]byte
	if _, err := rand.Read(r[:]); err != nil {
		return "", fmt.Errorf("no randomness for a secret's placeholder: %w", err)
	}
	return PlaceholderPrefix + hex.EncodeToString(r[:]), nil
}

// holdsSecret reports whether v contains a brokered value.
func (e *Egress) holdsSecret(v string) bool {
	if e.broker == nil {
		return false
	}
	for _, s := range e.broker.Secrets {
		if strings.Contains(v, s.Value) {
			return true
		}
	}
	return false
}

// SecretValues are the brokered values, for redaction on the host.
func (e *Egress) SecretValues() []string {
	if e.broker == nil {
		return nil
	}
	out := make([]string, len(e.broker.Secrets))
	for i, s := range e.broker.Secrets {
		out[i] = s.Value
	}
	return out
}

// BrokerSummary is the start header's line on the broker ("" when the
// proxy does not intercept): the secrets, and the passthrough hosts to
// which no secret can be sent.
func BrokerSummary(p *policy.Policy) string {
	if p == nil || !p.Intercepts() || p.Sandbox.Network != sandbox.NetworkProxy {
		return ""
	}
	var names []string
	for _, s := range p.Secrets() {
		names = append(names, s.Name)
	}
	line := "TLS intercepted with a session CA"
	if len(names) > 0 {
		line += "; secrets brokered (placeholders in the sandbox): " + strings.Join(names, ", ")
	}
	if pt := p.PassthroughRules(); len(pt) > 0 {
		hosts := make([]string, len(pt))
		for i, r := range pt {
			hosts[i] = r.Pattern
		}
		line += "; passthrough (not intercepted, no secret can be sent there): " + strings.Join(hosts, ", ")
	}
	return line
}
