package docker_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/agent"
	"github.com/agentbox/agentbox/internal/testutil"
	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/sandbox"
)

const tenMiB = 10 << 20

// benchNet starts a `network: proxy` session over transport ("socket" or
// "channel") against a 10 MiB HTTP upstream and a TCP echo on the host's
// loopback; it returns the session and the two ports.
func benchNet(b *testing.B, transport string) (sandbox.Session, string, string) {
	body := strings.Repeat("0123456789abcdef", tenMiB/16)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		io.WriteString(w, body)
	}))
	b.Cleanup(up.Close)
	echo, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { echo.Close() })
	go func() {
		for {
			c, err := echo.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); io.Copy(c, c) }()
		}
	}()
	p, err := policy.Parse("net.yaml", []byte(netPolicy))
	if err != nil {
		b.Fatal(err)
	}
	cfg := testutil.Config(b, b.TempDir())
	cfg.Network = sandbox.NetworkProxy
	cfg.ProxyOverChannel = transport == "channel"
	eg := agent.NewEgress(p, nopLog{})
	eg.Resolver = testResolver{}
	cfg.Egress = eg
	s := testutil.StartWith(b, cfg)
	_, upPort, _ := net.SplitHostPort(up.Listener.Addr().String())
	_, echoPort, _ := net.SplitHostPort(echo.Addr().String())
	return s, upPort, echoPort
}

// pyMetric runs a Python program in the sandbox that prints one number.
func pyMetric(b *testing.B, s sandbox.Session, code string) float64 {
	res, err := s.Exec(context.Background(), sandbox.ExecRequest{Command: "python3 - <<'EOF'\n" + code + "\nEOF", Timeout: 120 * time.Second})
	if err != nil || res.ExitCode != 0 {
		b.Fatalf("%v exit %d: %s", err, res.ExitCode, res.Output)
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(string(res.Output)), 64)
	if err != nil {
		b.Fatalf("%q: %v", res.Output, err)
	}
	return v
}

// BenchmarkProxyTransport measures, for the mounted socket and the
// executor channel: the throughput of a 10 MiB download through the proxy
// (timed inside the sandbox, MB/s) and the latency of a proxied
// connection (connect to the forwarder, CONNECT, one byte each way:
// µs/connect, timed inside the sandbox over 50 connections).
func BenchmarkProxyTransport(b *testing.B) {
	for _, transport := range []string{"socket", "channel"} {
		b.Run("download10MiB/"+transport, func(b *testing.B) {
			s, upPort, _ := benchNet(b, transport)
			var total float64
			for b.Loop() {
				total += pyMetric(b, s, fmt.Sprintf(`import urllib.request, time
t = time.perf_counter()
n = len(urllib.request.urlopen("http://allowed.test:%s/", timeout=60).read())
d = time.perf_counter() - t
assert n == %d, n
print(d)`, upPort, tenMiB))
			}
			b.ReportMetric(float64(tenMiB)/1e6/(total/float64(b.N)), "MB/s")
		})
		b.Run("connect/"+transport, func(b *testing.B) {
			s, _, echoPort := benchNet(b, transport)
			var total float64
			for b.Loop() {
				total += pyMetric(b, s, fmt.Sprintf(`import socket, time
t = time.perf_counter()
for _ in range(50):
    c = socket.create_connection(("127.0.0.1", 3128))
    c.sendall(b"CONNECT allowed.test:%s HTTP/1.1\r\nHost: allowed.test:%s\r\n\r\n")
    head = b""
    while not head.endswith(b"\r\n\r\n"):
        head += c.recv(1)
    assert head.startswith(b"HTTP/1.1 200"), head
    c.sendall(b"x")
    assert c.recv(1) == b"x"
    c.close()
print((time.perf_counter() - t) / 50)`, echoPort, echoPort))
			}
			b.ReportMetric(total/float64(b.N)*1e6, "µs/connect")
		})
	}
}
