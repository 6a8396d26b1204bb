package netproxy

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"testing"
)

// connectVia opens a tunnel to target through the proxy at proxy, or a
// direct connection when proxy is "".
func connectVia(b *testing.B, proxy, target string) (net.Conn, io.Reader) {
	if proxy == "" {
		c, err := net.Dial("tcp", target)
		if err != nil {
			b.Fatal(err)
		}
		return c, c
	}
	c, err := net.Dial("tcp", proxy)
	if err != nil {
		b.Fatal(err)
	}
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\n\r\n", target)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: "CONNECT"})
	if err != nil || resp.StatusCode != 200 {
		b.Fatalf("CONNECT: %v %v", resp, err)
	}
	return c, br
}

func benchProxy(b *testing.B) string {
	h := startProxy(b, `network: {allow: ["bench.test", "127.0.0.1"]}`, map[string][]netip.Addr{"bench.test": loopback},
		func(c *Config) { c.OnEvent = nil })
	return h.addr
}

// BenchmarkDownload100MB: the same 100 MB download over loopback, direct
// and through the proxy (MB/s is the figure to compare).
func BenchmarkDownload100MB(b *testing.B) {
	port := tcpServer(b, source(hundredMB))
	for _, mode := range []string{"direct", "proxy"} {
		b.Run(mode, func(b *testing.B) {
			proxy := ""
			if mode == "proxy" {
				proxy = benchProxy(b)
			}
			b.SetBytes(hundredMB)
			for b.Loop() {
				c, r := connectVia(b, proxy, hostport("127.0.0.1", port))
				if n, err := io.Copy(io.Discard, r); err != nil || n != hundredMB {
					b.Fatalf("%d bytes, %v", n, err)
				}
				c.Close()
			}
		})
	}
}

// BenchmarkConnectSetup: connection set-up plus one byte each way, direct
// and through the proxy (name resolution stubbed); the difference is the
// latency the proxy adds.
func BenchmarkConnectSetup(b *testing.B) {
	port := tcpServer(b, func(c net.Conn) { io.Copy(c, c) })
	for _, mode := range []string{"direct", "proxy"} {
		b.Run(mode, func(b *testing.B) {
			proxy, target := "", hostport("127.0.0.1", port)
			if mode == "proxy" {
				proxy, target = benchProxy(b), hostport("bench.test", port)
			}
			one := make([]byte, 1)
			for b.Loop() {
				c, r := connectVia(b, proxy, target)
				if _, err := c.Write(one); err != nil {
					b.Fatal(err)
				}
				if _, err := io.ReadFull(r, one); err != nil {
					b.Fatal(err)
				}
				c.Close()
			}
		})
	}
}
