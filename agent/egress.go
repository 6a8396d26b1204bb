package agent

import (
	"context"
	"fmt"
	"net"

	"github.com/agentbox/agentbox/netproxy"
	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/sandbox"
)

// Egress is the host-side proxy of `network: proxy` for the sandbox
// backends: each connection is served by package netproxy under the
// policy's network rules, and each attempt is appended to the audit log as
// a `net` record of the session.
type Egress struct {
	Policy   *policy.Policy
	Log      AuditLog          // must be safe for concurrent use (*audit.Writer is)
	Resolver netproxy.Resolver // nil: the host's resolver
	OnError  func(error)       // an event that could not be recorded; nil ignores it
}

var _ sandbox.Egress = (*Egress)(nil)

// NewEgress is the Egress of a session under p, recording to log.
func NewEgress(p *policy.Policy, log AuditLog) *Egress { return &Egress{Policy: p, Log: log} }

// ServeEgress serves one connection of session through the proxy.
func (e *Egress) ServeEgress(ctx context.Context, session string, c net.Conn) {
	if e.Policy == nil {
		c.Close() // fail closed: no rules, no egress
		return
	}
	px, err := netproxy.New(netproxy.Config{
		Policy: e.Policy, Resolver: e.Resolver,
		OnEvent: func(ev netproxy.Event) {
			if err := e.Log.Append(ev.Record(session)); err != nil && e.OnError != nil {
				e.OnError(fmt.Errorf("audit log: recording a net event: %w", err))
			}
		},
	})
	if err != nil {
		c.Close()
		return
	}
	px.ServeConn(ctx, c)
}

// WithEgress returns cfg with the host-side proxy set when its network is
// proxy (any other mode needs none).
func WithEgress(cfg sandbox.Config, p *policy.Policy, log AuditLog) sandbox.Config {
	if cfg.Network == sandbox.NetworkProxy {
		cfg.Egress = NewEgress(p, log)
	}
	return cfg
}
