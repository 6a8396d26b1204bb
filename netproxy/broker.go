package netproxy

import (
	"crypto/x509"
	"errors"
	"sync"

	"github.com/agentbox/agentbox/policy"
)

// RequestRules decides the requests inside intercepted connections;
// *policy.Policy implements it.
type RequestRules interface {
	Passthrough(t policy.NetTarget) (policy.NetRule, bool)
	HasRules(t policy.NetTarget) bool
	DecideRequest(t policy.NetTarget, method, path string) policy.RequestDecision
}

var _ RequestRules = (*policy.Policy)(nil)

// Secret is one brokered credential: the sandbox holds Placeholder; the
// proxy puts Value in its place in requests Spec allows.
type Secret struct {
	Spec        *policy.Secret
	Placeholder string
	Value       string
}

// Call is the tool call running in the sandbox when a request is made.
type Call struct {
	ID      string
	Command string // the decided script of an execute_bash call
}

// Broker turns on TLS interception: every allowed host that is not a
// network.passthrough entry is served through the session CA, each request
// decided by the rules, placeholders replaced by values only where their
// secret allows, values scrubbed from responses.
type Broker struct {
	CA      *CA
	Rules   RequestRules
	Secrets []Secret
	// Roots verifies upstream servers (the host's store plus
	// network.upstream_ca); nil is the host's store.
	Roots *x509.CertPool
	// Call returns the call running now ("" ID between calls); nil: none.
	Call func() Call

	scrubOnce sync.Once
	scrub     *scrubber
}

// KindSecretMisuse is Event.Alarm for a placeholder sent where its secret
// may not go, or in a request the rules deny.
const KindSecretMisuse = "secret_misuse"

// ReasonHeader carries the proxy's one-line reason on the responses it
// answers itself.
const ReasonHeader = "X-Agentbox-Reason"

func (b *Broker) check() error {
	if b.CA == nil || b.Rules == nil {
		return errors.New("netproxy: a broker needs a CA and rules")
	}
	for _, s := range b.Secrets {
		if s.Spec == nil || len(s.Placeholder) < 16 || len(s.Value) < policy.MinSecretLen {
			return errors.New("netproxy: a brokered secret needs its policy entry, a placeholder and a value")
		}
	}
	return nil
}

func (b *Broker) call() Call {
	if b.Call == nil {
		return Call{}
	}
	return b.Call()
}

// scrubber finds the secrets' values in responses (nil: no secret).
func (b *Broker) scrubber() *scrubber {
	b.scrubOnce.Do(func() {
		vals := make([]string, len(b.Secrets))
		for i, s := range b.Secrets {
			vals[i] = s.Value
		}
		if len(vals) > 0 {
			b.scrub = newScrubber(vals)
		}
	})
	return b.scrub
}
