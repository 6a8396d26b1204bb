package policy

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// Limits of a host name (RFC 1035).
const (
	maxHostLen  = 253
	maxLabelLen = 63
)

// NetTarget is a validated connection target: a canonical host (a
// lower-case ASCII name, or the IP address in its canonical form) and a
// port.
type NetTarget struct {
	Host string
	IP   netip.Addr // valid when Host is an IP literal
	Port int
}

// String is host:port, with an IPv6 address in brackets.
func (t NetTarget) String() string {
	h := t.Host
	if t.IP.Is6() {
		h = "[" + h + "]"
	}
	return h + ":" + strconv.Itoa(t.Port)
}

// ParseNetHost validates a host as a connection target and returns its
// canonical form. It refuses every form whose meaning depends on who
// parses it: IPv4 literals other than four decimal octets (2130706433,
// 0x7f.1, 0177.0.0.1, 127.1), IPv4-mapped and IPv4-compatible IPv6,
// zones, NUL, whitespace and control characters, userinfo, percent
// encoding, non-ASCII names, empty labels and a trailing dot. An IPv6
// address may be given with or without brackets.
func ParseNetHost(s string) (host string, ip netip.Addr, err error) {
	if s == "" {
		return "", ip, errors.New("empty host")
	}
	if len(s) > maxHostLen+2 {
		return "", ip, fmt.Errorf("host longer than %d characters", maxHostLen)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == 0:
			return "", ip, errors.New("NUL in host")
		case c <= ' ' || c == 0x7f:
			return "", ip, errors.New("whitespace or control character in host")
		case c >= 0x80:
			return "", ip, errors.New("non-ASCII host; write the name in ASCII (punycode, xn--...)")
		case c == '@':
			return "", ip, errors.New("userinfo (user@) in host")
		case c == '%':
			return "", ip, errors.New("percent-encoding or an IPv6 zone in host")
		case c == '\\' || c == '/' || c == '?' || c == '#':
			return "", ip, fmt.Errorf("%q in host", c)
		}
	}
	if strings.HasPrefix(s, "[") || strings.Contains(s, ":") {
		return parseIPv6Host(s)
	}
	if strings.HasSuffix(s, ".") {
		return "", ip, errors.New("trailing dot in host; write the name without it")
	}
	labels := strings.Split(s, ".")
	if looksNumeric(labels[len(labels)-1]) {
		a, err := netip.ParseAddr(s)
		if err != nil || !a.Is4() || !canonicalDotted(s) {
			return "", ip, errors.New("ambiguous IPv4 literal; write four decimal octets without leading zeros, like 10.0.0.5")
		}
		return a.String(), a, nil
	}
	for _, l := range labels {
		if err := checkLabel(l); err != nil {
			return "", ip, err
		}
	}
	return strings.ToLower(s), ip, nil
}

func parseIPv6Host(s string) (string, netip.Addr, error) {
	var none netip.Addr
	if strings.HasPrefix(s, "[") {
		if !strings.HasSuffix(s, "]") {
			return "", none, errors.New("unbalanced [ in host")
		}
		s = s[1 : len(s)-1]
	}
	if strings.ContainsAny(s, "[]") {
		return "", none, errors.New("stray [ or ] in host")
	}
	a, err := netip.ParseAddr(s)
	if err != nil || !a.Is6() {
		return "", none, errors.New("not a valid IPv6 address")
	}
	if a.Is4In6() || strings.Contains(s, ".") {
		return "", none, errors.New("IPv4 address written as IPv6 (::ffff:a.b.c.d); write the IPv4 address")
	}
	return a.String(), a, nil
}

// looksNumeric reports whether a label would be read as a number by some
// IPv4 parser: decimal digits, or 0x followed by hex digits (WHATWG URL
// treats a host whose last label is numeric as an IPv4 address).
func looksNumeric(l string) bool {
	if l == "" {
		return false
	}
	ll := strings.ToLower(l)
	if strings.HasPrefix(ll, "0x") {
		for _, c := range ll[2:] {
			if !strings.ContainsRune("0123456789abcdef", c) {
				return false
			}
		}
		return true
	}
	for _, c := range l {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// canonicalDotted reports whether s is exactly four decimal octets without
// leading zeros.
func canonicalDotted(s string) bool {
	parts := strings.Split(s, ".")
	if len(parts) != 4 {
		return false
	}
	for _, p := range parts {
		if p == "" || len(p) > 3 || (len(p) > 1 && p[0] == '0') {
			return false
		}
		n, err := strconv.Atoi(p)
		if err != nil || n > 255 {
			return false
		}
	}
	return true
}

func checkLabel(l string) error {
	if l == "" {
		return errors.New("empty label (..) in host")
	}
	if len(l) > maxLabelLen {
		return fmt.Errorf("label longer than %d characters in host", maxLabelLen)
	}
	if l[0] == '-' || l[len(l)-1] == '-' {
		return errors.New("label starts or ends with - in host")
	}
	for i := 0; i < len(l); i++ {
		c := l[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return fmt.Errorf("%q is not allowed in a host name", c)
		}
	}
	return nil
}

// ParsePort reads a TCP port: decimal, 1 to 65535, no sign or leading zero.
func ParsePort(s string) (int, error) {
	if s == "" || len(s) > 5 || s[0] == '0' {
		return 0, fmt.Errorf("bad port %q; write a number from 1 to 65535", s)
	}
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, fmt.Errorf("bad port %q; write a number from 1 to 65535", s)
		}
		n = n*10 + int(s[i]-'0')
	}
	if n > 65535 {
		return 0, fmt.Errorf("bad port %q; write a number from 1 to 65535", s)
	}
	return n, nil
}

// splitHostPort splits host[:port] and [v6][:port]; port is "" when
// absent. A bare IPv6 address (more than one colon, no brackets) has no
// port.
func splitHostPort(s string) (host, port string, err error) {
	if strings.HasPrefix(s, "[") {
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return "", "", errors.New("unbalanced [")
		}
		host, rest := s[:end+1], s[end+1:]
		if rest == "" {
			return host, "", nil
		}
		if rest[0] != ':' {
			return "", "", fmt.Errorf("unexpected %q after ]", rest)
		}
		if rest == ":" {
			return "", "", errors.New("empty port after the colon")
		}
		return host, rest[1:], nil
	}
	switch strings.Count(s, ":") {
	case 0:
		return s, "", nil
	case 1:
		i := strings.IndexByte(s, ':')
		if i == len(s)-1 {
			return "", "", errors.New("empty port after the colon")
		}
		return s[:i], s[i+1:], nil
	}
	return s, "", nil
}

// ParseNetTarget validates host:port (IPv6 in brackets). With defaultPort
// 0 the port is required; otherwise a missing port is defaultPort.
func ParseNetTarget(s string, defaultPort int) (NetTarget, error) {
	if strings.Contains(s, "@") {
		return NetTarget{}, errors.New("userinfo (user@) in host")
	}
	h, p, err := splitHostPort(s)
	if err != nil {
		return NetTarget{}, err
	}
	if !strings.HasPrefix(h, "[") && strings.Contains(h, ":") {
		return NetTarget{}, errors.New("IPv6 address without brackets; write [addr]:port")
	}
	t := NetTarget{Port: defaultPort}
	if p == "" && defaultPort == 0 {
		return NetTarget{}, errors.New("missing port; write host:port")
	}
	if p != "" {
		if t.Port, err = ParsePort(p); err != nil {
			return NetTarget{}, err
		}
	}
	if t.Host, t.IP, err = ParseNetHost(h); err != nil {
		return NetTarget{}, err
	}
	return t, nil
}
