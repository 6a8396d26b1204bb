// Package netproxy is the host-side egress proxy of `sandbox.network:
// proxy`. The sandbox has no network interface but lo; each TCP connection
// a program in it makes to the in-container forwarder (127.0.0.1:3128) is
// carried to the agentbox process and handed to Proxy.ServeConn.
//
// The proxy accepts CONNECT and absolute-URI HTTP requests and nothing
// else. It validates the target (refusing every ambiguous form: numeric
// IPv4 shorthands, IPv4-mapped IPv6, NUL or whitespace, userinfo, percent
// encoding, a trailing dot, a Host header that differs from the target),
// decides it with the policy's network rules, resolves the name itself,
// checks every resolved address (special ranges need an IP rule) and dials
// exactly an address it checked. A refusal is HTTP 403 with one line that
// names the rule. Every connection handed to it produces exactly one Event.
package netproxy

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"time"

	"github.com/agentbox/agentbox/internal/netutil"

	"github.com/agentbox/agentbox/policy"
)

// Decider decides connection attempts; *policy.Policy implements it.
type Decider interface {
	DecideConnect(t policy.NetTarget) policy.NetDecision
	DecideAddress(t policy.NetTarget, a netip.Addr) policy.NetDecision
}

// Resolver resolves host names; *net.Resolver implements it.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

var (
	_ Decider  = (*policy.Policy)(nil)
	_ Resolver = (*net.Resolver)(nil)
)

// Decisions recorded in Event.Decision.
const (
	Allow = "allow"
	Deny  = "deny"
)

// RuleRequest is Event.Rule for a request refused before the policy was
// asked: malformed, an unsupported method, or an ambiguous target.
const RuleRequest = "request"

// Event is one connection attempt, reported when it ends.
type Event struct {
	Method    string        // CONNECT, GET, ...; "" when no request line was read
	Host      string        // canonical target host ("" when unparsable)
	Port      int           // target port
	Addr      string        // ip:port dialed ("" when none)
	Decision  string        // Allow or Deny
	Rule      string        // deciding rule (network.allow[0], network.allow, request, ...)
	Reason    string        // one line, as sent to the client on refusal
	Status    int           // HTTP status the proxy answered (200 for an established tunnel)
	BytesUp   int64         // bytes sent to the upstream server
	BytesDown int64         // bytes sent back to the client
	Duration  time.Duration // from accepting the connection to closing it
	Err       string        // what went wrong after the decision (resolve, dial, reset)

	// A request inside an intercepted connection (see Broker), or a plain
	// HTTP request while a Broker is on.
	Path       string   // URL path and query as sent
	RuleText   string   // the network.rules entry that decided, as written
	Secret     string   // secrets whose placeholder the request carried (comma-separated)
	CallID     string   // the tool call running when the request was made
	BodySHA256 string   // sha256 of the request body sent with a secret (the receipt)
	Alarm      string   // KindSecretMisuse when a placeholder was refused
	PID        int      // the process that opened the connection, when the executor reported it
	Argv       []string // its program (for a secret bound by during: the program matched)
	Intercept  bool     // a CONNECT whose TLS the proxy terminated
}

// Config configures a Proxy.
type Config struct {
	Policy   Decider
	Resolver Resolver // nil: net.DefaultResolver
	// OnEvent receives one Event per connection, from the connection's
	// goroutine; it must be safe for concurrent use. Nil drops events.
	OnEvent        func(Event)
	HeaderTimeout  time.Duration // reading the request head; 0: 10s
	DialTimeout    time.Duration // resolving and connecting; 0: 10s
	MaxHeaderBytes int           // request head size; 0: 32 KiB
	// Broker turns on TLS interception, request rules and secrets; nil
	// keeps plain CONNECT tunnels.
	Broker *Broker
}

// Proxy is the egress proxy. It holds no goroutine or listener of its
// own: ServeConn and Serve return only when everything they started has
// ended.
type Proxy struct {
	cfg    Config
	dialer net.Dialer
}

// New checks cfg and fills in defaults.
func New(cfg Config) (*Proxy, error) {
	if cfg.Policy == nil {
		return nil, errors.New("netproxy: no policy; the proxy refuses to run without network rules")
	}
	if cfg.Resolver == nil {
		cfg.Resolver = net.DefaultResolver
	}
	if cfg.HeaderTimeout <= 0 {
		cfg.HeaderTimeout = 10 * time.Second
	}
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = 10 * time.Second
	}
	if cfg.MaxHeaderBytes <= 0 {
		cfg.MaxHeaderBytes = 32 << 10
	}
	if cfg.Broker != nil {
		if err := cfg.Broker.check(); err != nil {
			return nil, err
		}
	}
	if cfg.MaxHeaderBytes < 1024 {
		cfg.MaxHeaderBytes = 1024
	}
	return &Proxy{cfg: cfg, dialer: net.Dialer{Timeout: cfg.DialTimeout, KeepAlive: 30 * time.Second}}, nil
}

// Serve accepts connections from ln and serves each with ServeConn until
// ctx ends or ln fails. It closes ln and returns after every connection it
// accepted has been served; the error is nil when ctx ended it.
func (p *Proxy) Serve(ctx context.Context, ln net.Listener) error {
	return netutil.ServeEach(ctx, ln, "netproxy: accept", p.ServeConn)
}

func (p *Proxy) emit(ev Event) {
	if p.cfg.OnEvent != nil {
		p.cfg.OnEvent(ev)
	}
}
