package wire

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/agentbox/agentbox/sandbox"
)

// Grace is how long past a call's own timeout the host waits for the
// executor's answer before it declares the executor dead.
const Grace = 10 * time.Second

// HelloTimeout bounds sandbox start-up: the executor's first answer.
const HelloTimeout = 60 * time.Second

// fileWait bounds a file request.
const fileWait = 60 * time.Second

// Transport is what a backend supplies to reach the executor: a byte
// stream and a way to kill the sandbox. The Client does the rest (framing,
// authentication, sequencing, deadlines, failing closed).
type Transport struct {
	// Stream carries the frames: writes go to the executor's stdin, reads
	// return its stdout only. Optional methods are used when present:
	// SetWriteDeadline(time.Time) error bounds writes (a stopped executor
	// stops draining its stdin); CloseRead() error is called when the
	// client stops reading; Close() error is called by Client.Close.
	Stream io.ReadWriter
	// Kill kills the sandbox. The client calls it when the channel can no
	// longer be trusted (no answer in time, a bad or unsolicited frame).
	Kill func(ctx context.Context) error
	// Explain, if set, says why the channel ended (for example "killed:
	// out of memory"); "" lets the client give a generic reason.
	Explain func(err error) string
	// Diag, if set, returns what the executor wrote to its stderr.
	Diag func() string
	// DialProxy, if set, carries `network: proxy` over this channel (see
	// stream.go): the hello asks the executor to listen on
	// sandbox.ProxyListenAddr and to open a stream for each connection,
	// and the client dials the host-side proxy with DialProxy for each
	// stream and relays its bytes. The executor names no address: nothing
	// else is dialed. A failed dial refuses that connection (HTTP 502).
	// The context ends when the client closes. Pass "" as HelloConfig's
	// proxy socket then.
	DialProxy func(ctx context.Context) (net.Conn, error)
}

type frame struct {
	resp *Response
	err  error
}

// Client is the host side of the protocol with one executor. Calls are
// serialized; it is safe for concurrent use.
type Client struct {
	t      Transport
	key    []byte
	frames chan frame
	done   chan struct{} // closed by Close: the reader stops delivering
	wg     sync.WaitGroup

	mu     sync.Mutex // one request at a time
	broken error

	wmu    sync.Mutex // one frame at a time: requests, answers, pings
	nextID uint64

	approve func(ctx context.Context, ask sandbox.ExecAsk) bool
	peer    Peer // what the hello answer said

	relay     *relay // DialProxy set: the proxied connections
	streamSeq uint64 // the last stream frame's Seq (the reader's)

	closeOnce sync.Once

	// drain is closed when the client fails: the reader then discards
	// frames instead of waiting for a caller, so the stream keeps moving
	// and the engine can kill the sandbox (it waits for the container's
	// output to be read).
	drain     chan struct{}
	drainOnce sync.Once
}

// NewClient starts reading frames from t.Stream under a fresh session key.
// Call Hello once the executor runs, and Close when done.
func NewClient(t Transport) *Client {
	c := &Client{t: t, key: make([]byte, 32), frames: make(chan frame, 1), done: make(chan struct{}), drain: make(chan struct{})}
	_, _ = rand.Read(c.key)
	if t.DialProxy != nil {
		c.relay = newRelay(t.DialProxy, c.sendStream)
	}
	c.wg.Add(1)
	go c.read()
	return c
}

func (c *Client) read() {
	defer c.wg.Done()
	defer close(c.frames)
	if cr, ok := c.t.Stream.(interface{ CloseRead() error }); ok {
		defer cr.CloseRead() // unblocks whatever feeds the stream
	}
	for {
		resp, err := ReadResponse(c.t.Stream, c.key)
		if err == nil && (resp.Stream != nil || resp.Seq != 0) {
			if err = c.relayFrame(resp); err == nil {
				continue
			}
		}
		if err != nil {
			c.channelEnded(err)
		}
		select {
		case c.frames <- frame{resp: resp, err: err}:
		case <-c.drain:
		case <-c.done:
			return
		}
		if err != nil {
			return
		}
	}
}

// Hello hands the executor the session key and its settings: the output
// cap in bytes and whether background processes survive a call.
func (c *Client) Hello(ctx context.Context, outputCap int, keep bool) error {
	return c.HelloConfig(ctx, sandbox.Config{OutputCap: outputCap, KeepBackground: keep}, "")
}

// HelloConfig is Hello with every setting of cfg the executor enforces:
// the policy's command rules at exec time (asks go to
// cfg.Enforce.Approve), the effects check, the pids limit, and the dead
// man's switch, whose heartbeat this client then sends until Close; and
// the proxy socket of `network: proxy` ("" = no forwarder, or the
// forwarder over this channel when the Transport has DialProxy, which is
// refused for any cfg.Network but proxy).
func (c *Client) HelloConfig(ctx context.Context, cfg sandbox.Config, proxySocket string) error {
	if c.relay != nil && (proxySocket != "" || cfg.Network != sandbox.NetworkProxy) {
		return fmt.Errorf("%w: the proxy channel is for network: proxy without a socket (network %q, socket %q; internal error)", sandbox.ErrConfig, cfg.Network, proxySocket)
	}
	en := cfg.Enforce
	req := &Request{Op: OpHello, Key: c.key, Cap: cfg.OutputCap, Keep: cfg.KeepBackground,
		Policy: en.Policy, PolicyName: en.PolicyName, Approver: en.Approve != nil,
		Effects: wireRules(en.WriteRules), PidsMax: int(cfg.Pids), SetIDFilter: en.SetIDFilter, Proxy: proxySocket, ProxyChannel: c.relay != nil,
		Staged: cfg.Overlay != nil && cfg.Overlay.Staged}
	if en.Heartbeat > 0 {
		req.DeadlineMS = (3 * en.Heartbeat).Milliseconds()
	}
	c.approve = en.Approve
	mdir := en.ManifestDir
	if mdir == "" {
		mdir, _ = sandbox.ManifestDir() // none: made anew each session
	}
	if en.ByContent && mdir != "" && en.Image != "" {
		req.Manifest, _ = sandbox.LoadManifest(mdir, en.Image)
	}
	req.BuildManifest = en.ByContent && req.Manifest == nil
	resp, err := c.roundTrip(ctx, req, HelloTimeout)
	if err != nil {
		return err
	}
	if resp.Error != "" {
		return fmt.Errorf("%w: executor refused hello: %s", sandbox.ErrExecutor, resp.Error)
	}
	c.peer = Peer{Version: resp.Version, Protocol: resp.Protocol, Ifaces: resp.Ifaces, CanCancel: resp.CanCancel}
	if resp.Protocol != Protocol {
		return c.failKilled(&ProtocolError{Executor: resp.Protocol, Version: resp.Version})
	}
	if m := resp.Manifest; m != nil && req.BuildManifest && en.Image != "" {
		// Cached for the image's next sessions; a failure only costs the
		// next session the same work.
		m.Image = en.Image
		if mdir != "" {
			_ = sandbox.SaveManifest(mdir, m)
		}
	}
	if en.Heartbeat > 0 {
		c.wg.Add(1)
		go c.heartbeat(en.Heartbeat)
	}
	return nil
}

// Peer is what the executor said about itself in its hello answer.
type Peer struct {
	Version  string
	Protocol string
	Ifaces   []string // its network interfaces
	// CanCancel: a cancelled exec ends alone (OpCancel); else the
	// sandbox is killed.
	CanCancel bool
}

// Peer returns what the executor said in its hello answer.
func (c *Client) Peer() Peer { return c.peer }

// roundTrip sends one request and waits for its answer for at most wait.
// Anything wrong with the channel breaks the client for good and kills
// the sandbox: fail closed.
func (c *Client) roundTrip(ctx context.Context, req *Request, wait time.Duration) (*Response, error) {
	return c.exchange(ctx, req, wait, nil)
}

// exchange is roundTrip that hands the Out frames of a streaming exec to
// out, in order, before it reads the next frame (see OutChunk).
func (c *Client) exchange(ctx context.Context, req *Request, wait time.Duration, out func(*OutChunk)) (*Response, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.broken != nil {
		return nil, c.broken
	}
	// A frame nobody asked for means the channel is not ours alone.
	select {
	case f := <-c.frames:
		return nil, c.failKilled(fmt.Errorf("%w: unsolicited answer from the executor (%v)", sandbox.ErrExecutor, f.err))
	default:
	}
	if err := c.send(ctx, req, wait); err != nil {
		return nil, err
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	done := ctx.Done()
	for {
		select {
		case f, ok := <-c.frames:
			if !ok || f.err != nil {
				err := io.EOF
				if ok {
					err = f.err
				}
				return nil, c.fail(fmt.Errorf("%w: %s%s", sandbox.ErrExecutor, c.reason(err), c.diag()))
			}
			if f.resp.ID != req.ID {
				return nil, c.fail(fmt.Errorf("%w: answer for request %d while waiting for %d", sandbox.ErrExecutor, f.resp.ID, req.ID))
			}
			if f.resp.Out != nil {
				if out == nil || !req.StreamOutput {
					return nil, c.failKilled(fmt.Errorf("%w: an output frame for a %s request that did not ask for one", sandbox.ErrExecutor, req.Op))
				}
				out(f.resp.Out)
				continue
			}
			if f.resp.Ask == nil {
				return f.resp, nil
			}
			if req.Op != OpExec {
				return nil, c.fail(fmt.Errorf("%w: an ask frame for a %s request", sandbox.ErrExecutor, req.Op))
			}
			if err := c.answer(ctx, f.resp.Ask, wait); err != nil {
				return nil, err
			}
		case <-timer.C:
			if done == nil && ctx.Err() != nil { // cancelled, and the executor did not end the call
				return nil, c.failKilled(fmt.Errorf("%w: %w; the executor did not end the call within %s", sandbox.ErrClosed, ctx.Err(), CancelGrace))
			}
			return nil, c.failKilled(fmt.Errorf("%w: no answer within %s", sandbox.ErrExecutor, wait))
		case <-done:
			if req.Op != OpExec || !c.peer.CanCancel {
				return nil, c.fail(fmt.Errorf("%w: %w", sandbox.ErrClosed, ctx.Err()))
			}
			// The caller gave up on this call only: the executor kills
			// the command's processes and answers (Interrupted); the
			// sandbox stays. No answer within CancelGrace: fail closed.
			done = nil
			if err := c.send(context.WithoutCancel(ctx), &Request{Op: OpCancel, Target: req.ID}, CancelGrace); err != nil {
				return nil, err
			}
			timer.Reset(CancelGrace)
		}
	}
}

// CancelGrace is how long a cancelled exec may take to answer before the
// sandbox is killed.
const CancelGrace = 10 * time.Second

// send numbers and writes one request; a failed write breaks the client.
func (c *Client) send(ctx context.Context, req *Request, wait time.Duration) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.nextID++
	req.ID = c.nextID
	key := c.key
	if req.Op == OpHello {
		key = nil // the hello carries the key
	}
	var buf bytes.Buffer
	if err := WriteRequest(&buf, key, req); err != nil {
		c.nextID-- // nothing was sent
		return fmt.Errorf("request too large: %w", err)
	}
	if werr := c.write(ctx, buf.Bytes(), wait); werr != nil {
		if ctx.Err() != nil {
			return c.fail(fmt.Errorf("%w: %w", sandbox.ErrClosed, ctx.Err()))
		}
		return c.fail(fmt.Errorf("%w: sending request: %w%s", sandbox.ErrExecutor, werr, c.diag()))
	}
	return nil
}

// answer asks the approver about one exec (the program waits at its exec
// stop) and sends the answer; without an approver it denies.
func (c *Client) answer(ctx context.Context, ask *Ask, wait time.Duration) error {
	allow := false
	if c.approve != nil {
		allow = c.approve(ctx, sandbox.ExecAsk{Argv: ask.Argv, PID: ask.PID, Rule: ask.Rule, Reason: ask.Reason})
	}
	return c.send(context.WithoutCancel(ctx), &Request{Op: OpAnswer, Answer: &Answer{Seq: ask.Seq, Allow: allow}}, wait)
}

// ping sends one heartbeat frame.
func (c *Client) ping(wait time.Duration) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.nextID++
	var buf bytes.Buffer
	if err := WriteRequest(&buf, c.key, &Request{ID: c.nextID, Op: OpPing}); err != nil {
		return err
	}
	return c.write(context.Background(), buf.Bytes(), wait)
}

// heartbeat pings the executor every interval until Close, so that its
// dead man's switch fires only when this host is gone or stalled.
func (c *Client) heartbeat(every time.Duration) {
	defer c.wg.Done()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-c.done:
			return
		case <-t.C:
			if c.ping(every) != nil {
				return // the next call finds out why
			}
		}
	}
}

// write sends b. The write must not outlive the call either: a stopped
// executor stops draining its stdin, and a large request would block for
// good.
func (c *Client) write(ctx context.Context, b []byte, wait time.Duration) error {
	dl, ok := c.t.Stream.(interface{ SetWriteDeadline(time.Time) error })
	if !ok {
		_, err := c.t.Stream.Write(b)
		return err
	}
	_ = dl.SetWriteDeadline(time.Now().Add(wait))
	stop := context.AfterFunc(ctx, func() { _ = dl.SetWriteDeadline(time.Unix(1, 0)) })
	defer stop()
	_, err := c.t.Stream.Write(b)
	return err
}

// fail marks the client broken and kills the sandbox.
// When the kill itself fails (the engine stalled or died), the error says
// so: the sandbox may still exist.
func (c *Client) fail(err error) error {
	c.stopDelivery()
	if kerr := c.kill(); kerr != nil {
		err = fmt.Errorf("%w; %w", err, kerr)
	}
	c.broken = err
	return err
}

// failKilled is fail for an error that should say the sandbox is gone
// once it is.
func (c *Client) failKilled(err error) error {
	c.stopDelivery()
	if kerr := c.kill(); kerr != nil {
		err = fmt.Errorf("%w; %w", err, kerr)
	} else {
		err = fmt.Errorf("%w; the sandbox was killed", err)
	}
	c.broken = err
	return err
}

// stopDelivery makes the reader drain the stream: nobody reads frames
// from a broken client.
func (c *Client) stopDelivery() {
	c.drainOnce.Do(func() { close(c.drain) })
}

func (c *Client) kill() error {
	if c.t.Kill == nil {
		return nil
	}
	kctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return c.t.Kill(kctx)
}

func (c *Client) reason(err error) string {
	if c.t.Explain != nil {
		if s := c.t.Explain(err); s != "" {
			return s
		}
	}
	if errors.Is(err, io.EOF) {
		return "the executor closed the channel"
	}
	return "bad answer from the executor: " + err.Error()
}

func (c *Client) diag() string {
	if c.t.Diag != nil {
		if t := c.t.Diag(); t != "" {
			return "; executor said: " + t
		}
	}
	return ""
}

// Close stops the reader, closes the stream if it is an io.Closer and
// waits for the reader to return, and ends every proxied connection. It
// does not kill the sandbox.
func (c *Client) Close() error {
	var err error
	c.closeOnce.Do(func() {
		close(c.done)
		if cl, ok := c.t.Stream.(io.Closer); ok {
			err = cl.Close()
		}
		c.wg.Wait()
		if c.relay != nil {
			c.relay.stop()
		}
	})
	return err
}
