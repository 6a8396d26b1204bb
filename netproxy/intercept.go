package netproxy

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"time"

	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/sandbox"
)

// readerConn is a connection whose reads go through r (bytes read ahead).
type readerConn struct {
	net.Conn
	r io.Reader
}

func (c *readerConn) Read(b []byte) (int, error) { return c.r.Read(b) }

// tlsRecordHandshake is the first byte of a TLS ClientHello record.
const tlsRecordHandshake = 0x16

// intercept serves an established CONNECT tunnel to t (c from the client,
// read through br; up the checked upstream connection) request by request:
// TLS is terminated with a session certificate for t and started anew to
// the upstream, verified against the broker's roots (a failure answers
// every request with 502 and the reason: never a blind tunnel). A tunnel
// whose client speaks plain HTTP is served the same way without TLS. Each
// request is its own Event; connEv gets the totals.
func (p *Proxy) intercept(ctx context.Context, c net.Conn, br *bufio.Reader, up net.Conn, t policy.NetTarget, o *sandbox.Origin, connEv *Event) error {
	b := p.cfg.Broker
	c.SetReadDeadline(time.Now().Add(p.cfg.HeaderTimeout))
	first, err := br.Peek(1)
	if err != nil {
		return quietEOF(err)
	}
	cconn, uconn := net.Conn(&readerConn{Conn: c, r: br}), up
	overTLS := first[0] == tlsRecordHandshake
	var upErr error
	if overTLS {
		leaf, err := b.CA.leaf(t.Host)
		if err != nil {
			return err
		}
		tc := tls.Server(cconn, &tls.Config{
			Certificates: []tls.Certificate{*leaf},
			NextProtos:   []string{"http/1.1"},
			MinVersion:   tls.VersionTLS12,
		})
		hctx, cancel := context.WithTimeout(ctx, p.cfg.HeaderTimeout)
		err = tc.HandshakeContext(hctx)
		cancel()
		if err != nil {
			return fmt.Errorf("TLS from the sandbox: %w (does the client trust the session CA? SSL_CERT_FILE points at it)", err)
		}
		cconn = tc
		uc := tls.Client(up, &tls.Config{
			ServerName: t.Host,
			RootCAs:    b.Roots,
			NextProtos: []string{"http/1.1"},
			MinVersion: tls.VersionTLS12,
		})
		hctx, cancel = context.WithTimeout(ctx, p.cfg.DialTimeout)
		upErr = uc.HandshakeContext(hctx)
		cancel()
		uconn = uc
	}
	c.SetReadDeadline(time.Time{})
	head := &budgetReader{r: cconn}
	cbr := bufio.NewReaderSize(head, 32<<10)
	ubr := bufio.NewReaderSize(uconn, 32<<10)
	for {
		head.n = int64(p.cfg.MaxHeaderBytes) // a request head is bounded like the CONNECT's
		req, err := http.ReadRequest(cbr)
		head.n = math.MaxInt64
		if err != nil {
			return quietEOF(err)
		}
		start := time.Now()
		ev := Event{Host: connEv.Host, Port: connEv.Port, Addr: connEv.Addr, Decision: Allow, Rule: connEv.Rule}
		keep := false
		if upErr != nil {
			ev.Method, ev.Path = req.Method, req.URL.EscapedPath()
			ev.Err = "upstream TLS: " + upErr.Error()
			p.answer(cconn, &ev, 502, "", "", fmt.Sprintf("%s %s: the upstream's certificate did not verify against the host's trust store and network.upstream_ca: %v", req.Method, t, upErr), nil, "")
			ev.Decision = Allow
		} else {
			keep = p.exchange(cconn, req, uconn, ubr, t, overTLS, o, &ev)
		}
		ev.Duration = time.Since(start)
		connEv.BytesUp += ev.BytesUp
		connEv.BytesDown += ev.BytesDown
		p.emit(ev)
		if !keep {
			if tc, ok := cconn.(*tls.Conn); ok {
				tc.CloseWrite()
			}
			return nil
		}
	}
}

// budgetReader reads at most n more bytes from r, then fails.
type budgetReader struct {
	r io.Reader
	n int64
}

var errHeadTooLarge = errors.New("request head too large")

func (b *budgetReader) Read(p []byte) (int, error) {
	if b.n <= 0 {
		return 0, errHeadTooLarge
	}
	if int64(len(p)) > b.n {
		p = p[:b.n]
	}
	n, err := b.r.Read(p)
	b.n -= int64(n)
	return n, err
}

func quietEOF(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || errors.Is(err, io.ErrUnexpectedEOF) {
		return nil
	}
	return err
}
