package netproxy

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/agentbox/agentbox/policy"
)

// refusal is a request the proxy answers itself, with status and a
// one-line reason.
type refusal struct {
	status int
	rule   string
	reason string
}

func (r *refusal) Error() string { return r.reason }

func badRequest(format string, args ...any) *refusal {
	return &refusal{status: 400, rule: RuleRequest, reason: fmt.Sprintf(format, args...)}
}

// head is the part of a request head the proxy decides on.
type head struct {
	method  string
	target  policy.NetTarget
	connect bool
	size    int // bytes of the head, blank line included
}

// methods are the methods forwarded as absolute-URI HTTP requests.
var methods = map[string]bool{
	"GET": true, "HEAD": true, "POST": true, "PUT": true, "DELETE": true, "OPTIONS": true, "PATCH": true,
}

// readHead waits until br holds a whole request head (at most its buffer
// size) without consuming it.
func readHead(br *bufio.Reader) ([]byte, error) {
	for {
		if n := br.Buffered(); n > 0 {
			b, _ := br.Peek(n)
			if i := headEnd(b); i >= 0 {
				return b[:i], nil
			}
			if n >= br.Size() {
				return nil, &refusal{status: 431, rule: RuleRequest, reason: fmt.Sprintf("request head larger than %d bytes", br.Size())}
			}
		}
		_, err := br.Peek(br.Buffered() + 1) // read more
		switch {
		case err == nil:
		case br.Buffered() > 0 && isTimeout(err):
			return nil, &refusal{status: 408, rule: RuleRequest, reason: "request head not received in time"}
		default:
			return nil, err
		}
	}
}

// headEnd is the length of the head in b up to and including the blank
// line, or -1.
func headEnd(b []byte) int {
	if i := bytes.Index(b, []byte("\r\n\r\n")); i >= 0 {
		return i + 4
	}
	if i := bytes.Index(b, []byte("\n\n")); i >= 0 {
		return i + 2
	}
	return -1
}

// parseHead validates the request line and the Host header. The target
// forms refused here are those whose meaning depends on the parser.
func parseHead(raw []byte) (head, error) {
	h := head{size: len(raw)}
	lines := strings.Split(strings.TrimRight(string(raw), "\r\n"), "\n")
	for i := range lines {
		lines[i] = strings.TrimSuffix(lines[i], "\r")
	}
	parts := strings.Split(lines[0], " ")
	if len(parts) != 3 {
		return h, badRequest("malformed request line; send CONNECT host:port HTTP/1.1 or GET http://host/path HTTP/1.1")
	}
	method, rawTarget, version := parts[0], parts[1], parts[2]
	h.method = method
	if version != "HTTP/1.1" && version != "HTTP/1.0" {
		return h, badRequest("unsupported protocol %q; speak HTTP/1.1 to the proxy", clip(version))
	}
	var err error
	switch {
	case method == "CONNECT":
		h.connect = true
		if h.target, err = policy.ParseNetTarget(rawTarget, 0); err != nil {
			return h, ambiguous(rawTarget, err)
		}
	case !methods[method]:
		return h, &refusal{status: 405, rule: RuleRequest, reason: fmt.Sprintf("method %q not supported; the proxy takes CONNECT and plain HTTP GET, HEAD, POST, PUT, DELETE, OPTIONS, PATCH", clip(method))}
	default:
		if h.target, err = absoluteTarget(rawTarget); err != nil {
			return h, err
		}
	}
	var hosts []string
	for _, l := range lines[1:] {
		if l == "" {
			continue
		}
		if l[0] == ' ' || l[0] == '\t' {
			return h, badRequest("folded header line; send each header on one line")
		}
		name, value, ok := strings.Cut(l, ":")
		if !ok || name == "" || strings.ContainsAny(name, " \t") {
			return h, badRequest("malformed header line")
		}
		if strings.EqualFold(name, "Host") {
			hosts = append(hosts, strings.Trim(value, " \t"))
		}
	}
	if len(hosts) > 1 {
		return h, &refusal{status: 403, rule: RuleRequest, reason: fmt.Sprintf("%s refused: more than one Host header", h.target)}
	}
	if len(hosts) == 1 {
		defPort := 80 // RFC 9110 7.2: a Host without port means the scheme's default
		if h.connect {
			defPort = h.target.Port
		}
		ht, err := policy.ParseNetTarget(hosts[0], defPort)
		if err != nil || ht.Host != h.target.Host || ht.Port != h.target.Port {
			return h, &refusal{status: 403, rule: RuleRequest, reason: fmt.Sprintf("%s refused: Host header %q differs from the request target", h.target, clip(hosts[0]))}
		}
	}
	return h, nil
}

// absoluteTarget reads http://authority/... without decoding anything:
// the authority must be a plain host[:port].
func absoluteTarget(s string) (policy.NetTarget, error) {
	lower := strings.ToLower(s)
	switch {
	case strings.HasPrefix(lower, "https://"):
		return policy.NetTarget{}, badRequest("https:// through the proxy: use CONNECT (set HTTPS_PROXY)")
	case strings.HasPrefix(s, "/"):
		return policy.NetTarget{}, badRequest("this is a proxy: send an absolute URI (GET http://host/path) or CONNECT host:port")
	case !strings.HasPrefix(lower, "http://"):
		return policy.NetTarget{}, badRequest("unsupported request target; only http:// URIs and CONNECT are proxied")
	}
	rest := s[len("http://"):]
	auth := rest
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		auth = rest[:i]
	}
	t, err := policy.ParseNetTarget(auth, 80)
	if err != nil {
		return t, ambiguous(auth, err)
	}
	return t, nil
}

func ambiguous(target string, err error) *refusal {
	return &refusal{status: 403, rule: RuleRequest, reason: fmt.Sprintf("%s refused: bad or ambiguous target: %v", clip(target), err)}
}

// clip makes s printable on one line and short.
func clip(s string) string {
	const max = 80
	var b strings.Builder
	for i := 0; i < len(s) && b.Len() < max; i++ {
		c := s[i]
		if c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			fmt.Fprintf(&b, "\\x%02x", c)
			continue
		}
		b.WriteByte(c)
	}
	if b.Len() >= max {
		b.WriteString("...")
	}
	return b.String()
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
