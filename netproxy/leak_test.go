package netproxy

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// hostileUpstream is an allowed host that is not the secret's: it serves
// the value (stored there by another host, as a gist would be) in every
// place of a response the proxy hands back.
func hostileUpstream(t *testing.T, value string) *httptest.Server {
	raw := func(w http.ResponseWriter, msg string) {
		c, bw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		defer c.Close()
		bw.WriteString(strings.ReplaceAll(msg, "\n", "\r\n"))
		bw.Flush()
	}
	zip := func(enc string, b []byte) []byte {
		var out bytes.Buffer
		var zw io.WriteCloser
		if enc == "deflate" {
			zw = zlib.NewWriter(&out)
		} else {
			zw = gzip.NewWriter(&out)
		}
		zw.Write(b)
		zw.Close()
		return out.Bytes()
	}
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch p := r.URL.Path; p {
		case "/reason":
			raw(w, "HTTP/1.1 200 "+value+"\nContent-Length: 2\nConnection: close\n\nok")
		case "/trailer":
			raw(w, "HTTP/1.1 200 OK\nTransfer-Encoding: chunked\nTrailer: X-Leak\nConnection: close\n\n2\nok\n0\nX-Leak: "+value+"\n\n")
		case "/header-name":
			raw(w, "HTTP/1.1 200 OK\nX-"+value+": 1\nContent-Length: 2\nConnection: close\n\nok")
		case "/gzip", "/deflate", "/x-gzip":
			enc := strings.TrimPrefix(p, "/")
			w.Header().Set("Content-Encoding", enc)
			w.Write(zip(enc, []byte("stored: "+value)))
		case "/gzip-twice":
			w.Header().Set("Content-Encoding", "gzip, gzip")
			w.Write(zip("gzip", zip("gzip", []byte("stored: "+value))))
		case "/br", "/zstd", "/compress", "/weird":
			w.Header().Set("Content-Encoding", strings.TrimPrefix(p, "/"))
			w.Write([]byte("opaque bytes that might hold " + value))
		case "/split":
			f := http.NewResponseController(w)
			for i := 0; i < len(value); i += 3 {
				io.WriteString(w, value[i:min(i+3, len(value))])
				f.Flush()
			}
		default:
			w.Header().Set("X-Echo", value)
			fmt.Fprintf(w, "%s", value)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestBrokerNothingOfTheSecretComesBack: from a second allowed host that
// is not the secret's, the value comes back neither in the reason phrase,
// a trailer, a header name or value, nor in the body in any content
// encoding or split across writes; an encoding the proxy cannot decode is
// refused with 502 and the reason, never passed through.
func TestBrokerNothingOfTheSecretComesBack(t *testing.T) {
	hostile := hostileUpstream(t, testValue)
	bh := startBroker(t, "", func(good, other *upstream) *x509.CertPool {
		p := x509.NewCertPool()
		for _, c := range []*x509.Certificate{good.Certificate(), other.Certificate(), hostile.Certificate()} {
			p.AddCert(c)
		}
		return p
	})
	for _, path := range []string{"/reason", "/trailer", "/header-name", "/gzip", "/x-gzip", "/deflate", "/gzip-twice", "/split", "/echo"} {
		resp, err := bh.client.Get(hostile.URL + path)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		var dump bytes.Buffer
		resp.Write(&dump) // status line, headers, body, trailers as the client got them
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("%s: status %d", path, resp.StatusCode)
		}
		if strings.Contains(strings.ToLower(dump.String()), strings.ToLower(testValue)) || newScrubber([]string{testValue}).String(dump.String()) != dump.String() {
			t.Errorf("%s: the value came back:\n%s", path, dump.String())
		}
		if strings.Contains(path, "zip") || path == "/deflate" {
			if !strings.Contains(dump.String(), "stored: ****") {
				t.Errorf("%s: the body was not decoded and scrubbed: %q", path, dump.String())
			}
		}
	}
	for _, path := range []string{"/br", "/zstd", "/compress", "/weird"} {
		resp, err := bh.client.Get(hostile.URL + path)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 502 || !strings.Contains(resp.Header.Get(ReasonHeader), "cannot decode") || bytes.Contains(b, []byte("opaque")) {
			t.Errorf("%s: %d %q %q, want 502 with the reason", path, resp.StatusCode, resp.Header.Get(ReasonHeader), b)
		}
	}
}

// TestBrokerRawResponseScrubbed reads the proxy's answer byte for byte
// (no client parsing that could hide a trailer or a reason phrase).
func TestBrokerRawResponseScrubbed(t *testing.T) {
	hostile := hostileUpstream(t, testValue)
	bh := startBroker(t, "", func(good, other *upstream) *x509.CertPool {
		p := x509.NewCertPool()
		p.AddCert(hostile.Certificate())
		return p
	})
	tr := bh.client.Transport.(*http.Transport)
	for _, path := range []string{"/reason", "/trailer"} {
		c, _, resp := rawRequest(t, bh.addr, "CONNECT "+strings.TrimPrefix(hostile.URL, "https://")+" HTTP/1.1\n")
		if resp.StatusCode != 200 {
			t.Fatalf("CONNECT: %d", resp.StatusCode)
		}
		cfg := tr.TLSClientConfig.Clone()
		cfg.ServerName = "127.0.0.1"
		tc := tls.Client(c, cfg)
		fmt.Fprintf(tc, "GET %s HTTP/1.1\r\nHost: %s\r\n\r\n", path, strings.TrimPrefix(hostile.URL, "https://"))
		all, err := io.ReadAll(bufio.NewReader(tc))
		if len(all) == 0 {
			t.Fatalf("%s: nothing read: %v", path, err)
		}
		if bytes.Contains(all, []byte(testValue)) || !bytes.HasPrefix(all, []byte("HTTP/1.1 200 OK\r\n")) {
			t.Errorf("%s: raw answer %q", path, all)
		}
	}
}
