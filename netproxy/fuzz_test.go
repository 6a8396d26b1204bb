package netproxy

import (
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/policy"
)

// inetAton is the permissive IPv4 parser of C libraries (inet_aton): one
// to four parts, each decimal, octal (leading 0) or hex (0x). A name the
// proxy accepts must never be an address to it.
func inetAton(s string) bool {
	parts := strings.Split(s, ".")
	if len(parts) > 4 {
		return false
	}
	for _, p := range parts {
		base, digits := 10, p
		switch {
		case strings.HasPrefix(strings.ToLower(p), "0x"):
			base, digits = 16, p[2:]
			if digits == "" {
				continue // "0x" is 0 to glibc
			}
		case len(p) > 1 && p[0] == '0':
			base, digits = 8, p[1:]
		}
		if _, err := strconv.ParseUint(digits, base, 32); err != nil {
			return false
		}
	}
	return true
}

func FuzzParseHead(f *testing.F) {
	for _, s := range []string{
		"CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n",
		"GET http://example.com/x HTTP/1.1\r\nHost: example.com\r\n\r\n",
		"GET http://[2001:db8::1]:8080/ HTTP/1.1\r\n\r\n",
		"CONNECT 2130706433:80 HTTP/1.1\r\n\r\n",
		"CONNECT 0x7f.1:80 HTTP/1.1\r\n\r\n",
		"CONNECT 0177.0.0.1:80 HTTP/1.1\r\n\r\n",
		"CONNECT [::ffff:127.0.0.1]:80 HTTP/1.1\r\n\r\n",
		"GET http://a@b/ HTTP/1.1\r\n\r\n",
		"GET http://a%2eb/ HTTP/1.1\r\n\r\n",
		"GET http://example.com./ HTTP/1.1\r\n\r\n",
		"GET HTTP://Example.COM:80?x HTTP/1.0\r\nhost: example.com\r\n\r\n",
		"CONNECT a.b:1 HTTP/1.1\n\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		h, err := parseHead(raw)
		if err != nil {
			return
		}
		host := h.target.Host
		if strings.ContainsAny(host, "\x00 \t\r\n%@/\\?#[]") || host != strings.ToLower(host) || host == "" {
			t.Fatalf("accepted host %q", host)
		}
		if h.target.Port < 1 || h.target.Port > 65535 {
			t.Fatalf("accepted port %d", h.target.Port)
		}
		if ip := h.target.IP; ip.IsValid() {
			if ip.Is4In6() || ip.Zone() != "" || ip.String() != host {
				t.Fatalf("accepted address %v as %q", ip, host)
			}
		} else if inetAton(host) {
			t.Fatalf("accepted %q as a name, but inet_aton reads it as an address", host)
		}
		again, err := policy.ParseNetTarget(h.target.String(), 0)
		if err != nil || again != h.target {
			t.Fatalf("%v does not round-trip: %v %v", h.target, again, err)
		}
		if h.connect {
			return
		}
		// Go's URL parser must see the same host and port in the target.
		line, _, _ := strings.Cut(string(raw), "\n")
		u, err := url.Parse(strings.Split(line, " ")[1])
		if err != nil {
			return
		}
		port := u.Port()
		if port == "" {
			port = "80"
		}
		uh := strings.ToLower(u.Hostname())
		if a, err := netip.ParseAddr(uh); err == nil {
			uh = a.String()
		}
		if uh != host || port != strconv.Itoa(h.target.Port) {
			t.Fatalf("proxy reads %v, net/url reads %q port %q", h.target, u.Hostname(), port)
		}
	})
}
