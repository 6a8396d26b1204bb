package netproxy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/sandbox"
)

// ServeConn serves one client connection: one CONNECT tunnel or one plain
// HTTP request (answered with Connection: close). It closes c, returns when
// the attempt has ended (or ctx has), and reports exactly one Event. The
// connection's origin is unknown: a secret bound to programs (during) is
// not substituted into it.
func (p *Proxy) ServeConn(ctx context.Context, c net.Conn) { p.ServeConnFrom(ctx, c, nil) }

// ServeConnFrom is ServeConn for a connection whose opening processes the
// executor reported (nil: unknown).
func (p *Proxy) ServeConnFrom(ctx context.Context, c net.Conn, o *sandbox.Origin) {
	start := time.Now()
	ev := Event{Decision: Deny}
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer func() {
		cancel()
		stop()
		c.Close()
		ev.Duration = time.Since(start)
		p.emit(ev)
	}()
	if ctx.Err() != nil {
		ev.Reason = "the session has ended"
		return
	}

	c.SetReadDeadline(time.Now().Add(p.cfg.HeaderTimeout))
	br := bufio.NewReaderSize(c, p.cfg.MaxHeaderBytes)
	raw, err := readHead(br)
	if err != nil {
		p.refuse(c, &ev, err)
		return
	}
	h, err := parseHead(raw)
	ev.Method = h.method
	if h.target.Host != "" {
		ev.Host, ev.Port = h.target.Host, h.target.Port
	}
	if err != nil {
		p.refuse(c, &ev, err)
		return
	}
	c.SetReadDeadline(time.Time{})

	up, d, err := p.dial(ctx, h.target, &ev)
	if err != nil {
		p.refuse(c, &ev, err)
		return
	}
	ev.Decision, ev.Rule, ev.Reason = Allow, d.Rule, d.Reason
	stopUp := context.AfterFunc(ctx, func() { up.Close() })
	defer func() {
		stopUp()
		up.Close()
	}()
	brokered := false
	if b := p.cfg.Broker; b != nil {
		if pr, pass := b.Rules.Passthrough(h.target); pass {
			ev.Reason = d.Reason + "; " + pr.ID + " " + pr.Pattern + ": passthrough, not intercepted"
		} else {
			brokered = true
		}
	}
	switch {
	case h.connect:
		br.Discard(h.size)
		if _, err := c.Write([]byte("HTTP/1.1 200 Connection established\r\n\r\n")); err != nil {
			ev.Err = "client: " + err.Error()
			return
		}
		ev.Status = 200
		if brokered {
			ev.Intercept = true
			err = p.intercept(ctx, c, br, up, h.target, o, &ev)
		} else {
			ev.BytesUp, ev.BytesDown, err = tunnel(c, br, up)
		}
	case brokered:
		var req *http.Request
		if req, err = http.ReadRequest(br); err == nil {
			p.exchange(c, req, up, bufio.NewReader(up), h.target, false, o, &ev)
		}
	default:
		err = forward(c, br, up, h.target, &ev)
	}
	if err != nil && ctx.Err() == nil {
		ev.Err = err.Error()
	} else if ctx.Err() != nil {
		ev.Err = "the session ended during the transfer"
	}
}

// dial decides t, resolves it, checks every address and connects to one
// of them. A refusal is a *refusal; ev gets the address and rule.
func (p *Proxy) dial(ctx context.Context, t policy.NetTarget, ev *Event) (net.Conn, policy.NetDecision, error) {
	d := p.cfg.Policy.DecideConnect(t)
	ev.Rule = d.Rule
	if d.Verdict != policy.Allow {
		return nil, d, &refusal{status: 403, rule: d.Rule, reason: d.Reason}
	}
	dctx, cancel := context.WithTimeout(ctx, p.cfg.DialTimeout)
	defer cancel()
	addrs := []netip.Addr{t.IP}
	if !t.IP.IsValid() {
		var err error
		addrs, err = p.cfg.Resolver.LookupNetIP(dctx, "ip", t.Host)
		if err == nil && len(addrs) == 0 {
			err = errors.New("no address")
		}
		if err != nil {
			ev.Err = "resolve: " + err.Error()
			return nil, d, &refusal{status: 502, rule: d.Rule, reason: fmt.Sprintf("%s: cannot resolve %s: %v", t, t.Host, err)}
		}
	}
	for i, a := range addrs {
		addrs[i] = a.Unmap()
		if ad := p.cfg.Policy.DecideAddress(t, addrs[i]); ad.Verdict != policy.Allow {
			ev.Addr = netip.AddrPortFrom(addrs[i], uint16(t.Port)).String()
			ev.Rule = ad.Rule
			return nil, ad, &refusal{status: 403, rule: ad.Rule, reason: ad.Reason}
		}
	}
	var lastErr error
	for _, a := range addrs {
		ap := netip.AddrPortFrom(a, uint16(t.Port))
		ev.Addr = ap.String()
		c, err := p.dialer.DialContext(dctx, "tcp", ap.String())
		if err == nil {
			if tc, ok := c.(*net.TCPConn); ok {
				tc.SetNoDelay(true)
			}
			return c, d, nil
		}
		lastErr = err
	}
	ev.Err = "dial: " + lastErr.Error()
	return nil, d, &refusal{status: 502, rule: d.Rule, reason: fmt.Sprintf("%s: cannot connect: %v", t, lastErr)}
}

// refuse answers err to the client (a *refusal with its status, anything
// else 400) and records it in ev.
func (p *Proxy) refuse(c net.Conn, ev *Event, err error) {
	var r *refusal
	if !errors.As(err, &r) {
		if ev.Method == "" {
			ev.Rule, ev.Reason = RuleRequest, "no request: "+err.Error()
			return // the client sent nothing usable or went away
		}
		r = badRequest("%v", err)
	}
	reason := r.reason
	if r.status == 403 && r.rule == "network.allow" && strings.Contains(reason, "not in network.allow") {
		reason += " (add the host to network.allow in the policy to allow it)"
	}
	ev.Status, ev.Rule, ev.Reason = r.status, r.rule, reason
	if r.status == 502 {
		ev.Decision = Allow // allowed, but the upstream could not be reached
	}
	body := "agentbox: " + reason + "\n"
	// The reason is in the status line too: a client of a CONNECT tunnel
	// (pip, curl, git) shows the status line only.
	msg := "HTTP/1.1 " + strconv.Itoa(r.status) + " " + reasonPhrase(r.status, reason) + "\r\n" +
		"Content-Type: text/plain; charset=utf-8\r\nContent-Length: " + strconv.Itoa(len(body)) +
		"\r\nConnection: close\r\n\r\n" + body
	c.SetWriteDeadline(time.Now().Add(p.cfg.HeaderTimeout))
	c.Write([]byte(msg))
}

// reasonPhrase is the status line's reason: agentbox's one-line reason
// (printable ASCII, at most 200 bytes), after the standard text.
func reasonPhrase(code int, reason string) string {
	var b strings.Builder
	b.WriteString(statusText(code) + " (agentbox: ")
	for i := 0; i < len(reason) && b.Len() < 220; i++ {
		if c := reason[i]; c >= 0x20 && c < 0x7f {
			b.WriteByte(c)
		} else {
			b.WriteByte('?')
		}
	}
	b.WriteByte(')')
	return b.String()
}

func statusText(code int) string {
	switch code {
	case 400:
		return "Bad Request"
	case 403:
		return "Forbidden"
	case 405:
		return "Method Not Allowed"
	case 408:
		return "Request Timeout"
	case 431:
		return "Request Header Fields Too Large"
	case 502:
		return "Bad Gateway"
	}
	return "Error"
}
