package netproxy

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"time"
)

const hundredMBHTTPS = 100 << 20

// interceptBench is an HTTPS upstream on loopback and clients that reach
// it directly, through a plain CONNECT tunnel, and through the
// intercepting proxy (a secret for the upstream, so responses are also
// scrubbed: the worst case).
type interceptBench struct {
	up                          *httptest.Server
	direct, tunnel, intercepted *http.Client
}

func newInterceptBench(b *testing.B) *interceptBench {
	b.Setenv("BENCH_TOKEN", testValue)
	zero := make([]byte, 1<<20)
	up := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/small" {
			io.WriteString(w, "ok")
			return
		}
		w.Header().Set("Content-Length", fmt.Sprint(hundredMBHTTPS))
		for n := 0; n < hundredMBHTTPS; n += len(zero) {
			if _, err := w.Write(zero); err != nil {
				return
			}
		}
	}))
	b.Cleanup(up.Close)
	port := strings.TrimPrefix(up.URL, "https://127.0.0.1:")
	upRoots := x509.NewCertPool()
	upRoots.AddCert(up.Certificate())
	client := func(proxy string, roots *x509.CertPool) *http.Client {
		tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}, DisableCompression: true}
		if proxy != "" {
			pu, _ := url.Parse("http://" + proxy)
			tr.Proxy = http.ProxyURL(pu)
		}
		b.Cleanup(tr.CloseIdleConnections)
		return &http.Client{Transport: tr}
	}
	ib := &interceptBench{up: up, direct: client("", upRoots)}
	plain := startProxy(b, `network: {allow: ["127.0.0.1"]}`, nil, func(c *Config) { c.OnEvent = nil })
	ib.tunnel = client(plain.addr, upRoots)

	yaml := fmt.Sprintf("network: {allow: [\"127.0.0.1\"]}\nsecrets:\n  TOKEN: {from: \"env:BENCH_TOKEN\", hosts: [\"127.0.0.1:%s\"]}\n", port)
	pol := mustPolicy(b, yaml)
	ca, err := NewCA("bench")
	if err != nil {
		b.Fatal(err)
	}
	broker := &Broker{CA: ca, Rules: pol, Roots: upRoots,
		Secrets: []Secret{{Spec: pol.Secrets()[0], Placeholder: testPlaceholder, Value: testValue}}}
	h := startProxy(b, yaml, nil, func(c *Config) { c.OnEvent = nil; c.Broker = broker })
	trust := x509.NewCertPool()
	trust.AddCert(ca.Cert())
	ib.intercepted = client(h.addr, trust)
	return ib
}

func (ib *interceptBench) clients() []struct {
	name string
	c    *http.Client
} {
	return []struct {
		name string
		c    *http.Client
	}{{"direct", ib.direct}, {"tunnel", ib.tunnel}, {"intercepted", ib.intercepted}}
}

func get(b *testing.B, c *http.Client, u string, hdr string) int64 {
	req, _ := http.NewRequest("GET", u, nil)
	if hdr != "" {
		req.Header.Set("Authorization", "Bearer "+hdr)
	}
	resp, err := c.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	n, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 {
		b.Fatalf("GET %s: %d, %v", u, resp.StatusCode, err)
	}
	return n
}

// BenchmarkHTTPSDownload100MB: one 100 MB HTTPS download over loopback,
// direct, through a plain CONNECT tunnel, and through the intercepting
// proxy (TLS terminated and re-established, the placeholder replaced, the
// response scrubbed of the value). MB/s is the figure to compare; cpu-ms/op
// (server, proxy and client together: all in this process) is the same
// comparison unaffected by what else the machine runs.
func BenchmarkHTTPSDownload100MB(b *testing.B) {
	ib := newInterceptBench(b)
	for _, m := range ib.clients() {
		b.Run(m.name, func(b *testing.B) {
			b.SetBytes(hundredMBHTTPS)
			cpu := cpuTime(b)
			for b.Loop() {
				if n := get(b, m.c, ib.up.URL+"/big", testPlaceholder); n != hundredMBHTTPS {
					b.Fatalf("%d bytes", n)
				}
			}
			b.ReportMetric(float64((cpuTime(b)-cpu).Milliseconds())/float64(b.N), "cpu-ms/op")
		})
	}
}

// cpuTime is the CPU time this process has used (user and system).
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkHTTPSRequestAfterFirst: a small HTTPS request on a kept-alive
// connection (the first request, with the handshakes, is made before the
// timer starts). The difference between intercepted and direct is the
// latency the broker adds per request after the first.
func BenchmarkHTTPSRequestAfterFirst(b *testing.B) {
	ib := newInterceptBench(b)
	for _, m := range ib.clients() {
		b.Run(m.name, func(b *testing.B) {
			get(b, m.c, ib.up.URL+"/small", testPlaceholder)
			for b.Loop() {
				get(b, m.c, ib.up.URL+"/small", testPlaceholder)
			}
		})
	}
}
