package agent

import (
	"context"
	"fmt"
	"maps"
	"net"
	"strings"
	"sync/atomic"

	"github.com/agentbox/agentbox/netproxy"
	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/sandbox"
)

// Egress is the host-side proxy of `network: proxy` for the sandbox
// backends: each connection is served by package netproxy under the
// policy's network rules, and each attempt is appended to the audit log as
// a `net` record of the session (a refused placeholder also as an
// `alarm`). With secrets or network.rules it brokers (see broker.go).
type Egress struct {
	Policy   *policy.Policy
	Log      AuditLog          // must be safe for concurrent use (*audit.Writer is)
	Resolver netproxy.Resolver // nil: the host's resolver
	OnError  func(error)       // an event that could not be recorded; nil ignores it

	broker *netproxy.Broker
	call   atomic.Pointer[netproxy.Call]
}

// CallTracker learns which tool call runs, so that the proxy can bind
// credentialed requests to it (receipts, secrets.NAME.during).
type CallTracker interface {
	BeginCall(id, command string)
	EndCall()
}

var (
	_ sandbox.Egress = (*Egress)(nil)
	_ CallTracker    = (*Egress)(nil)
)

// NewEgress is the Egress of a session under p, recording to log.
func NewEgress(p *policy.Policy, log AuditLog) *Egress { return &Egress{Policy: p, Log: log} }

// BeginCall records the call now running (command: its decided script).
func (e *Egress) BeginCall(id, command string) {
	e.call.Store(&netproxy.Call{ID: id, Command: command})
}

// EndCall records that no call runs.
func (e *Egress) EndCall() { e.call.Store(nil) }

func (e *Egress) current() netproxy.Call {
	if c := e.call.Load(); c != nil {
		return *c
	}
	return netproxy.Call{}
}

// ServeEgress serves one connection of session through the proxy.
func (e *Egress) ServeEgress(ctx context.Context, session string, c net.Conn) {
	if e.Policy == nil {
		c.Close() // fail closed: no rules, no egress
		return
	}
	if e.Policy.Intercepts() && e.broker == nil {
		c.Close() // fail closed: secrets or rules without their broker
		return
	}
	px, err := netproxy.New(netproxy.Config{
		Policy: e.Policy, Resolver: e.Resolver, Broker: e.broker,
		OnEvent: func(ev netproxy.Event) {
			err := e.Log.Append(ev.Record(session))
			if a := ev.AlarmRecord(session); a != nil && err == nil {
				err = e.Log.Append(a)
			}
			if err != nil && e.OnError != nil {
				e.OnError(fmt.Errorf("audit log: recording a net event: %w", err))
			}
		},
	})
	if err != nil {
		c.Close()
		return
	}
	var origin *sandbox.Origin // unknown unless the executor's channel reported it
	if oc, ok := c.(*sandbox.OriginConn); ok {
		origin = oc.Origin
	}
	px.ServeConnFrom(ctx, c, origin)
}

// WithEgress returns cfg with the host-side proxy set when its network is
// proxy (any other mode needs none). When the policy has secrets or
// network.rules it also starts the broker: the secrets are read on the
// host now, the sandbox gets their placeholders and the session CA's
// trust (cfg.Env, cfg.TrustPEM).
func WithEgress(ctx context.Context, cfg sandbox.Config, p *policy.Policy, log AuditLog) (sandbox.Config, error) {
	if cfg.Network != sandbox.NetworkProxy {
		return withoutSecrets(cfg, p)
	}
	e := NewEgress(p, log)
	if p.Intercepts() {
		env, trust, err := e.startBroker(ctx, cfg.SessionID)
		if err != nil {
			return cfg, err
		}
		vars := maps.Clone(cfg.Env)
		if vars == nil {
			vars = map[string]string{}
		}
		for k, v := range vars {
			if _, brokered := env[k]; !brokered && e.holdsSecret(v) {
				return cfg, fmt.Errorf("sandbox.env passes %s, whose value holds a brokered secret's value; remove it from sandbox.env (the sandbox gets the placeholder in the secret's own variable)", k)
			}
		}
		maps.Copy(vars, env)
		cfg.Env, cfg.TrustPEM = vars, trust
		for _, s := range p.Secrets() {
			if len(s.During) > 0 {
				// Only the executor's channel says which process opened a
				// connection (a program could reach a mounted socket itself).
				cfg.ProxyOverChannel = true
			}
		}
	}
	cfg.Egress = e
	return cfg, nil
}

// withoutSecrets keeps the policy's secrets out of a sandbox that has no
// broker (network none or open): a variable of a secret's name is not
// passed, and another one holding a secret's value refuses the session.
func withoutSecrets(cfg sandbox.Config, p *policy.Policy) (sandbox.Config, error) {
	secrets := p.Secrets()
	if len(secrets) == 0 {
		return cfg, nil
	}
	vars := maps.Clone(cfg.Env)
	for _, s := range secrets {
		delete(vars, s.Name)
	}
	for _, s := range secrets {
		v := s.Peek()
		if len(v) < policy.MinSecretLen {
			continue
		}
		for k, x := range vars {
			if strings.Contains(x, v) {
				return cfg, fmt.Errorf("sandbox.env passes %s, whose value holds secrets.%s's value, into a sandbox without the proxy; remove it from sandbox.env", k, s.Name)
			}
		}
	}
	cfg.Env = vars
	return cfg, nil
}
