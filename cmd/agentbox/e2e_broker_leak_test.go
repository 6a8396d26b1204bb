package main_test

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"html"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
)

// leakProbe fetches paths from an allowed host byte for byte (CONNECT to
// the in-sandbox proxy, TLS with the session CA, a raw GET) and prints
// each raw answer in base64, so that the terminal's redaction cannot hide
// what came back: the test looks for the value in it on the host.
const leakProbe = `import base64, os, socket, ssl, sys
ctx = ssl.create_default_context(cafile=os.environ["SSL_CERT_FILE"])
proxy = os.environ["HTTPS_PROXY"].split("//")[1].strip("/").split(":")
def raw(port, path):
    s = socket.create_connection((proxy[0], int(proxy[1])), timeout=30)
    s.sendall(b"CONNECT 127.0.0.1:%d HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n" % (port, port))
    head = b""
    while b"\r\n\r\n" not in head:
        c = s.recv(1)
        if not c:
            return head
        head += c
    t = ctx.wrap_socket(s, server_hostname="127.0.0.1")
    t.sendall(b"GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nAccept-Encoding: gzip, deflate, br, zstd\r\nConnection: close\r\n\r\n" % (path.encode(), port))
    out = b""
    while True:
        try:
            c = t.recv(65536)
        except (ssl.SSLError, OSError):
            break
        if not c:
            break
        out += c
    return out
port = int(sys.argv[1])
for p in sys.argv[2:]:
    print("RAW", p, base64.b64encode(raw(port, p)).decode(), flush=True)
`

// spellingsOf are transformations of v an upstream might send back.
func spellingsOf(v string) map[string]string {
	each := func(format string) string {
		var b strings.Builder
		for i := 0; i < len(v); i++ {
			fmt.Fprintf(&b, format, v[i])
		}
		return b.String()
	}
	return map[string]string{
		"upper": strings.ToUpper(v), "percent": each("%%%02X"), "json": each("\\u%04x"),
		"html": each("&#x%x;"), "hex": hex.EncodeToString([]byte(v)),
		"base64": base64.StdEncoding.EncodeToString([]byte("x:" + v)), "base64url": base64.RawURLEncoding.EncodeToString([]byte(v)),
	}
}

// holdsValue reports whether b spells v in any way spellingsOf knows,
// after undoing percent, JSON and HTML escapes, in any case.
func holdsValue(b []byte, v string) bool {
	s := string(b)
	for _, sp := range spellingsOf(v) {
		if strings.Contains(s, sp) && sp != strings.ToUpper(v) {
			return true
		}
	}
	dec := strings.NewReplacer("\\u00", "%", "\\x", "%").Replace(s)
	var out strings.Builder
	for i := 0; i < len(dec); i++ {
		if dec[i] == '%' && i+2 < len(dec) {
			if x, err := hex.DecodeString(dec[i+1 : i+3]); err == nil {
				out.WriteByte(x[0])
				i += 2
				continue
			}
		}
		out.WriteByte(dec[i])
	}
	return strings.Contains(strings.ToLower(html.UnescapeString(out.String())), strings.ToLower(v))
}

// TestBrokerNothingComesBackEffect: with a secret brokered for one host,
// a SECOND allowed host (not the secret's) that holds the value serves it
// back in the reason phrase, a trailer, a header name, every content
// encoding, split across writes and in the usual transformations; the
// real binary hands none of it to the sandbox (raw bytes as the sandbox
// read them), refuses the encodings it cannot decode with 502 and a
// reason, and the audit log never holds the value.
func TestBrokerNothingComesBackEffect(t *testing.T) { brokerNothingComesBack(t, dockerBroker(t)) }

func brokerNothingComesBack(t *testing.T, be brokerEnv) {
	var rb [12]byte
	rand.Read(rb[:])
	value := "leakE2E" + hex.EncodeToString(rb[:])
	ca := newTestCA(t)
	goodPort := ca.serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	raw := func(w http.ResponseWriter, msg string) {
		c, bw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer c.Close()
		bw.WriteString(strings.ReplaceAll(msg, "\n", "\r\n"))
		bw.Flush()
	}
	compress := func(enc string, b []byte) []byte {
		var out bytes.Buffer
		var zw io.WriteCloser = gzip.NewWriter(&out)
		if enc == "deflate" {
			zw = zlib.NewWriter(&out)
		}
		zw.Write(b)
		zw.Close()
		return out.Bytes()
	}
	sp := spellingsOf(value)
	hostilePort := ca.serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.Path
		switch {
		case p == "/reason":
			raw(w, "HTTP/1.1 200 "+value+"\nContent-Length: 2\nConnection: close\n\nok")
		case p == "/trailer":
			raw(w, "HTTP/1.1 200 OK\nTransfer-Encoding: chunked\nTrailer: X-Leak\nConnection: close\n\n2\nok\n0\nX-Leak: "+value+"\n\n")
		case p == "/header-name":
			raw(w, "HTTP/1.1 200 OK\nX-"+value+": 1\nX-Echo: "+value+"\nContent-Length: 2\nConnection: close\n\nok")
		case p == "/gzip" || p == "/deflate":
			w.Header().Set("Content-Encoding", p[1:])
			w.Write(compress(p[1:], []byte("stored: "+value)))
		case p == "/br" || p == "/zstd":
			w.Header().Set("Content-Encoding", p[1:])
			w.Write([]byte("opaque " + value))
		case p == "/split":
			for i := 0; i < len(value); i += 2 {
				io.WriteString(w, value[i:min(i+2, len(value))])
				http.NewResponseController(w).Flush()
			}
		case strings.HasPrefix(p, "/t/"):
			io.WriteString(w, "<"+sp[p[3:]]+">")
		}
	}))
	dir := t.TempDir()
	caFile := writeFile(t, filepath.Join(dir, "upstream-ca.pem"), string(ca.pem), 0o644)
	pol := writeFile(t, filepath.Join(dir, "leak.yaml"), fmt.Sprintf(`version: 1
extends: none
commands: {default: allow}
sandbox: {network: proxy%s}
network:
  allow: ["127.0.0.1"]
  upstream_ca: %s
secrets:
  TOKEN: {from: "env:LEAK_E2E_TOKEN", hosts: ["127.0.0.1:%s"]}
`, be.sandbox, caFile, goodPort), 0o644)
	ws := t.TempDir()
	writeFile(t, filepath.Join(ws, "probe.py"), leakProbe, 0o644)
	paths := []string{"/reason", "/trailer", "/header-name", "/gzip", "/deflate", "/split", "/br", "/zstd"}
	for name := range sp {
		paths = append(paths, "/t/"+name)
	}
	log := filepath.Join(dir, "audit.jsonl")
	r := be.run(t, []string{"LEAK_E2E_TOKEN=" + value}, "exec", "--workspace", ws, "--policy", pol, "--audit", log, "--",
		"python3 probe.py "+hostilePort+" "+strings.Join(paths, " "))
	if r.code != 0 {
		t.Fatalf("exec: %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	got := map[string][]byte{}
	for _, line := range strings.Split(r.stdout, "\n") {
		f := strings.Fields(line)
		if len(f) == 3 && f[0] == "RAW" {
			got[f[1]], _ = base64.StdEncoding.DecodeString(f[2])
		}
	}
	for _, p := range paths {
		b, ok := got[p]
		switch {
		case !ok || len(b) == 0:
			t.Errorf("%s: no answer read in the sandbox", p)
		case holdsValue(b, value):
			t.Errorf("%s: the value reached the sandbox:\n%q", p, b)
		case p == "/br" || p == "/zstd":
			if !bytes.HasPrefix(b, []byte("HTTP/1.1 502")) || !bytes.Contains(b, []byte("cannot decode")) || bytes.Contains(b, []byte("opaque")) {
				t.Errorf("%s: want a 502 with the reason, got %q", p, b)
			}
		case !bytes.HasPrefix(b, []byte("HTTP/1.1 200 OK\r\n")):
			t.Errorf("%s: %q", p, b)
		case (p == "/gzip" || p == "/deflate") && !bytes.Contains(b, []byte("stored: *****")):
			t.Errorf("%s: not decoded and scrubbed: %q", p, b)
		case strings.HasPrefix(p, "/t/") && !bytes.Contains(b, []byte(strings.Repeat("*", len(value)))):
			t.Errorf("%s: not masked: %q", p, b)
		}
	}
	if strings.Contains(r.stdout+r.stderr, value) {
		t.Error("the value reached the terminal")
	}
	brokerAudit(t, log, value)
}
