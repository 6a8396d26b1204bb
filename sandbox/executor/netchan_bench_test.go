package executor

import (
	"bufio"
	"context"
	"io"
	"net"
	"testing"

	"github.com/agentbox/agentbox/sandbox"
	"github.com/agentbox/agentbox/sandbox/wire"
)

// BenchmarkProxyChannelDownload: 10 MiB from a host "proxy" to a
// connection on the forwarder, through the real executor and wire.Client
// over pipes (no engine): the channel's own ceiling. The fake proxy reads
// the origin line first, as the host's does (without it, the rest of that
// line blocked the relay and the download ended short).
func BenchmarkProxyChannelDownload(b *testing.B) {
	const size = 10 << 20
	src := make([]byte, size)
	s := &Server{testRoot: b.TempDir(), proxyAddr: "127.0.0.1:0", descendantsOnly: true}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	go func() { s.Serve(inR, outW); outW.Close() }()
	c := wire.NewClient(wire.Transport{Stream: pipeStream{Reader: outR, w: inW, r: outR}, DialProxy: func(context.Context) (net.Conn, error) {
		a, z := net.Pipe()
		go func() {
			defer z.Close()
			// The stream starts with the connection's origin line (who
			// opened it), then the client's byte.
			br := bufio.NewReader(z)
			if _, err := sandbox.ReadOrigin(br); err != nil {
				return
			}
			if _, err := br.ReadByte(); err != nil {
				return
			}
			z.Write(src)
		}()
		return a, nil
	}})
	defer c.Close()
	if err := c.HelloConfig(context.Background(), sandbox.Config{Network: sandbox.NetworkProxy}, ""); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(size)
	for b.Loop() {
		conn, err := net.Dial("tcp", s.proxyAddr)
		if err != nil {
			b.Fatal(err)
		}
		conn.Write([]byte("x"))
		if n, err := io.Copy(io.Discard, conn); n != size {
			b.Fatalf("%d bytes, %v", n, err)
		}
		conn.Close()
	}
}
