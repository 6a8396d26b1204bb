package docker

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/agentbox/agentbox/sandbox"
	"github.com/agentbox/agentbox/sandbox/wire"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"
)

// probeWait bounds how long a new proxy connection may stay silent before
// it is handed to the proxy anyway (which then times it out itself).
const probeWait = 10 * time.Second

// egressServer is the host side of one `network: proxy` session: a
// private directory holding a unix socket, bind-mounted into the container
// at sandbox.ProxySocket and served by the session's Egress until stop;
// or, with sandbox.Config.ProxyOverChannel, no socket at all and a dialer
// that serves each connection the executor carries over its channel.
// A nil *egressServer (any other network mode) does nothing.
type egressServer struct {
	dialer *wire.EgressDialer // over the channel; nil with the socket
	trust  *trustBundle       // the session CA bundle when the proxy intercepts TLS

	dir    string
	sock   string
	ln     *net.UnixListener
	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
}

// startEgress starts the proxy socket of a `network: proxy` session, or
// returns nil for any other mode. The socket lives until stop, not until
// ctx (which only bounds the start).
func startEgress(ctx context.Context, cfg sandbox.Config, id string) (*egressServer, error) {
	if cfg.Network != sandbox.NetworkProxy {
		return nil, nil
	}
	if cfg.Egress == nil {
		return nil, fmt.Errorf("%w: network: proxy needs the host-side proxy (sandbox.Config.Egress is nil; internal error) — refusing to start", sandbox.ErrConfig)
	}
	trust, err := newTrustBundle(cfg.TrustPEM)
	if err != nil {
		return nil, err
	}
	if cfg.ProxyOverChannel {
		return &egressServer{dialer: &wire.EgressDialer{Egress: cfg.Egress, Session: id}, trust: trust}, nil
	}
	dir, err := os.MkdirTemp("", proxyDirPrefix)
	if err != nil {
		trust.remove()
		return nil, fmt.Errorf("%w: creating the network proxy's socket directory: %v; check $TMPDIR", sandbox.ErrUnavailable, err)
	}
	e := &egressServer{dir: dir, sock: filepath.Join(dir, "proxy.sock"), done: make(chan struct{}), trust: trust}
	e.ln, err = net.ListenUnix("unix", &net.UnixAddr{Name: e.sock, Net: "unix"})
	if err == nil {
		// The directory (0700) keeps other host users out; the socket
		// itself must be connectable by whatever uid the sandbox runs as.
		err = os.Chmod(e.sock, 0o666)
	}
	if err != nil {
		if e.ln != nil {
			e.ln.Close()
		}
		_ = os.RemoveAll(dir)
		trust.remove()
		return nil, fmt.Errorf("%w: listening on the network proxy's socket: %v", sandbox.ErrUnavailable, err)
	}
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	e.cancel = cancel
	go e.serve(sctx, cfg.Egress, id)
	return e, nil
}

// serve accepts connections until stop and hands each to eg; it returns
// after every connection it accepted has been served.
func (e *egressServer) serve(ctx context.Context, eg sandbox.Egress, id string) {
	defer close(e.done)
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		c, err := e.ln.AcceptUnix()
		if err != nil {
			return // closed by stop (or broken: forwarded connections then get 502)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if pc := probe(ctx, c); pc != nil {
				eg.ServeEgress(ctx, id, pc)
			}
		}()
	}
}

// probe waits for the connection's first byte. A connection closed
// without one is the executor's start-up check (or a client that gave up
// before asking anything): it is not an attempt and is not served.
func probe(ctx context.Context, c *net.UnixConn) net.Conn {
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	_ = c.SetReadDeadline(time.Now().Add(probeWait))
	br := bufio.NewReaderSize(c, 1)
	_, err := br.Peek(1)
	_ = c.SetReadDeadline(time.Time{})
	if errors.Is(err, io.EOF) || ctx.Err() != nil {
		c.Close()
		return nil
	}
	return &peekedConn{UnixConn: c, r: br}
}

// peekedConn is a unix connection whose first bytes were read ahead.
type peekedConn struct {
	*net.UnixConn
	r *bufio.Reader
}

func (p *peekedConn) Read(b []byte) (int, error) { return p.r.Read(b) }

// apply mounts the socket into the container and points programs at the
// in-container forwarder; the container keeps network mode none.
func (e *egressServer) apply(ccfg *container.Config, hc *container.HostConfig) {
	if e == nil {
		return
	}
	penv := sandbox.ProxyEnv()
	env := ccfg.Env[:0:0]
	for _, kv := range ccfg.Env {
		if k, _, _ := strings.Cut(kv, "="); penv[k] == "" {
			env = append(env, kv)
		}
	}
	for _, k := range []string{"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "NO_PROXY", "no_proxy"} {
		env = append(env, k+"="+penv[k])
	}
	ccfg.Env = env
	e.trust.apply(hc)
	if e.dialer == nil {
		hc.Mounts = append(hc.Mounts, mount.Mount{Type: mount.TypeBind, Source: e.sock, Target: sandbox.ProxySocket, ReadOnly: true})
	}
}

// socket is the socket's path inside the container, "" without a proxy
// or over the channel.
func (e *egressServer) socket() string {
	if e == nil || e.dialer != nil {
		return ""
	}
	return sandbox.ProxySocket
}

// fillTrust writes the session CA bundle once the container exists.
func (e *egressServer) fillTrust(ctx context.Context, eng Engine, cid string) error {
	if e == nil {
		return nil
	}
	return e.trust.fill(ctx, eng, cid)
}

// dialProxy is the wire.Transport's DialProxy: set over the channel only.
func (e *egressServer) dialProxy() func(context.Context) (net.Conn, error) {
	if e == nil || e.dialer == nil {
		return nil
	}
	return e.dialer.Dial
}

// stop closes the socket, ends every proxied connection, waits for them
// and removes the directory; over the channel it waits for the
// connections the closed client ended. Safe to call more than once.
func (e *egressServer) stop() {
	if e == nil {
		return
	}
	if e.dialer != nil {
		e.dialer.Wait()
		e.trust.remove()
		return
	}
	e.once.Do(func() {
		e.cancel()
		e.ln.Close()
		<-e.done
		_ = os.RemoveAll(e.dir)
		e.trust.remove()
	})
}

// proxyDirPrefix names the per-session socket directories (os.MkdirTemp).
const proxyDirPrefix = "agentbox-net-"

// removeProxyDir removes the socket directory of a `network: proxy`
// container that gc removed (its owner was SIGKILLed and could not): the
// directory of the mount at sandbox.ProxySocket, only when it has the
// shape agentbox creates (…/agentbox-net-*/proxy.sock); likewise the
// session CA bundle's (…/agentbox-ca-*/ca-bundle.pem).
func removeProxyDir(mounts []container.MountPoint) {
	for _, m := range mounts {
		if m.Destination == sandbox.CABundlePath && filepath.Base(m.Source) == "ca-bundle.pem" {
			if dir := filepath.Dir(m.Source); strings.HasPrefix(filepath.Base(dir), caDirPrefix) {
				_ = os.RemoveAll(dir) // the session CA bundle (see trustBundle)
			}
			continue
		}
		if m.Destination != sandbox.ProxySocket || filepath.Base(m.Source) != "proxy.sock" {
			continue
		}
		if dir := filepath.Dir(m.Source); strings.HasPrefix(filepath.Base(dir), proxyDirPrefix) {
			_ = os.RemoveAll(dir)
		}
	}
}
