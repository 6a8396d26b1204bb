package policy

import (
	"net/netip"
	"strings"
	"testing"
)

func TestParseNetHost(t *testing.T) {
	good := map[string]string{
		"example.com":        "example.com",
		"Example.COM":        "example.com",
		"a-b_c.example":      "a-b_c.example",
		"10.0.0.5":           "10.0.0.5",
		"0.0.0.0":            "0.0.0.0",
		"[::1]":              "::1",
		"2001:DB8::1":        "2001:db8::1",
		"1.2.example.com":    "1.2.example.com",
		"xn--bcher-kva.test": "xn--bcher-kva.test",
	}
	for in, want := range good {
		got, _, err := ParseNetHost(in)
		if err != nil || got != want {
			t.Errorf("ParseNetHost(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	bad := []string{
		"", "2130706433", "0x7f.1", "0x7f000001", "0177.0.0.1", "127.1", "127.0.1", "127.0.0.01",
		"1.2.3.4.5", "256.0.0.1", "example.123", "example.0x1f",
		"[::ffff:127.0.0.1]", "::ffff:7f00:1", "[::127.0.0.1]", "[fe80::1%eth0]", "fe80::1%25eth0",
		"exa\x00mple.com", "exa mple.com", "example.com\t", "example.com\n", "exa\x7fmple.com",
		"user@example.com", "example.com.", "example.com..", ".example.com", "a..b",
		"ex%61mple.com", "bücher.test", "-a.example", "a-.example", "a/b", "a\\b", "a?b", "a#b",
		"[::1", "::1]", "[[::1]]", strings.Repeat("a", 64) + ".com", strings.Repeat("a.", 130) + "com",
	}
	for _, in := range bad {
		if got, _, err := ParseNetHost(in); err == nil {
			t.Errorf("ParseNetHost(%q) = %q, want an error", in, got)
		}
	}
}

func TestParseNetTarget(t *testing.T) {
	for in, want := range map[string]string{
		"example.com:443": "example.com:443", "[::1]:8080": "[::1]:8080", "10.0.0.5:80": "10.0.0.5:80",
	} {
		got, err := ParseNetTarget(in, 0)
		if err != nil || got.String() != want {
			t.Errorf("ParseNetTarget(%q) = %v, %v; want %s", in, got, err, want)
		}
	}
	if got, err := ParseNetTarget("example.com", 80); err != nil || got.Port != 80 {
		t.Errorf("default port: %v %v", got, err)
	}
	for _, in := range []string{"example.com", "example.com:", "example.com:0", "example.com:080", "example.com:+80",
		"example.com:65536", "::1:80", "[::1]x", "[::1]:", "example.com:80:80", "127.1:80", "example.com.:443"} {
		if got, err := ParseNetTarget(in, 0); err == nil {
			t.Errorf("ParseNetTarget(%q) = %v, want an error", in, got)
		}
	}
}

func netPolicy(t *testing.T, body string) *Policy {
	t.Helper()
	p, err := Parse("net.yaml", []byte("version: 1\nsandbox: {network: proxy}\n"+body))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func target(t *testing.T, s string) NetTarget {
	t.Helper()
	tg, err := ParseNetTarget(s, 0)
	if err != nil {
		t.Fatal(err)
	}
	return tg
}

func TestNetworkDecision(t *testing.T) {
	p := netPolicy(t, `network:
  allow: ["pypi.org", "*.pythonhosted.org", "github.com:443", "10.0.0.5:8080", "192.168.1.0/24", "[fd00::/8]:443", "up.test"]
  deny:  ["*.internal.example.com", "evil.pythonhosted.org", "192.168.1.66"]
`)
	pub := []netip.Addr{netip.MustParseAddr("93.184.216.34")}
	cases := []struct {
		target string
		addrs  []netip.Addr
		want   Verdict
		rule   string
		reason string
	}{
		{"pypi.org:443", pub, Allow, "network.allow[0]", "allowed by network.allow[0]"},
		{"PyPI.org:80", pub, Allow, "network.allow[0]", ""},
		{"files.pythonhosted.org:443", pub, Allow, "network.allow[1]", ""},
		{"pythonhosted.org:443", pub, Deny, "network.allow", "not in network.allow"},
		{"evil.pythonhosted.org:443", pub, Deny, "network.deny[1]", `matched network.deny[1] "evil.pythonhosted.org"`},
		{"github.com:443", pub, Allow, "network.allow[2]", ""},
		{"github.com:22", pub, Deny, "network.allow", "github.com:22 refused: not in network.allow"},
		{"example.com:443", pub, Deny, "network.allow", "example.com:443 refused: not in network.allow"},
		{"10.0.0.5:8080", nil, Allow, "network.allow[3]", ""},
		{"10.0.0.5:8081", nil, Deny, "network.allow", ""},
		{"192.168.1.7:22", nil, Allow, "network.allow[4]", ""},
		{"192.168.1.66:22", nil, Deny, "network.deny[2]", ""},
		{"[fd00::1]:443", nil, Allow, "network.allow[5]", ""},
		{"[fd00::1]:80", nil, Deny, "network.allow", ""},
		// A name allowed by a host rule that resolves to a special address.
		{"up.test:80", []netip.Addr{netip.MustParseAddr("127.0.0.1")}, Deny, "network.allow",
			"up.test:80 refused: resolves to 127.0.0.1 (loopback) and no IP rule allows it"},
		{"up.test:80", []netip.Addr{netip.MustParseAddr("::ffff:127.0.0.1")}, Deny, "network.allow", "(loopback)"},
		{"up.test:80", []netip.Addr{netip.MustParseAddr("93.184.216.34"), netip.MustParseAddr("169.254.169.254")}, Deny, "network.allow", "(cloud metadata)"},
		{"up.test:80", []netip.Addr{netip.MustParseAddr("100.64.1.1")}, Deny, "network.allow", "(CGNAT)"},
		{"up.test:80", []netip.Addr{netip.MustParseAddr("fd00:ec2::254")}, Deny, "network.allow", "(cloud metadata)"},
		{"up.test:80", []netip.Addr{netip.MustParseAddr("192.168.1.9")}, Allow, "network.allow[6]", "allowed by network.allow[6]"},
		{"up.test:80", []netip.Addr{netip.MustParseAddr("192.168.1.66")}, Deny, "network.deny[2]", "resolves to 192.168.1.66, matched network.deny[2]"},
		{"up.test:80", pub, Allow, "network.allow[6]", ""},
	}
	for _, c := range cases {
		d := p.NetworkDecision(target(t, c.target), c.addrs)
		if d.Verdict != c.want || d.Rule != c.rule || !strings.Contains(d.Reason, c.reason) {
			t.Errorf("%s %v: got %s %s %q; want %s %s containing %q", c.target, c.addrs, d.Verdict, d.Rule, d.Reason, c.want, c.rule, c.reason)
		}
	}
}

func TestNetworkEmptyAllowDeniesAll(t *testing.T) {
	p := netPolicy(t, "")
	for _, s := range []string{"example.com:443", "10.0.0.1:80", "[::1]:22"} {
		if d := p.NetworkDecision(target(t, s), nil); d.Verdict != Deny || !strings.Contains(d.Reason, "not in network.allow") {
			t.Errorf("%s: %+v", s, d)
		}
	}
	if p.Sandbox.Network != "proxy" {
		t.Errorf("sandbox.network = %q", p.Sandbox.Network)
	}
}

func TestMetadataName(t *testing.T) {
	p := netPolicy(t, `network: {allow: ["*.google.internal", "metadata.google.internal"]}`)
	tg := target(t, "metadata.google.internal:80")
	d := p.NetworkDecision(tg, []netip.Addr{netip.MustParseAddr("8.8.8.8")})
	if d.Verdict != Deny || !strings.Contains(d.Reason, "cloud metadata") {
		t.Errorf("metadata name: %+v", d)
	}
}

func TestDecideNet(t *testing.T) {
	p := netPolicy(t, `network: {allow: ["up.test", "127.0.0.1:8080"]}`)
	for _, c := range []struct {
		host string
		port int
		addr string
		want string
	}{
		{"up.test", 8080, "127.0.0.1:8080", "allow"},
		{"up.test", 8081, "127.0.0.1:8081", "deny"},
		{"up.test", 443, "", "allow"},
		{"other.test", 443, "", "deny"},
		{"127.1", 8080, "", "deny"},
	} {
		if got, rule := p.DecideNet(c.host, c.port, c.addr); got != c.want {
			t.Errorf("DecideNet(%s, %d, %s) = %s %s; want %s", c.host, c.port, c.addr, got, rule, c.want)
		}
	}
}

func TestAddressClass(t *testing.T) {
	for a, want := range map[string]string{
		"8.8.8.8": "", "2606:4700::1111": "", "127.0.0.1": "loopback", "::1": "loopback", "10.1.2.3": "private",
		"172.31.0.1": "private", "172.32.0.1": "", "192.168.0.1": "private", "100.64.0.1": "CGNAT", "169.254.1.1": "link-local",
		"169.254.169.254": "cloud metadata", "fe80::1": "link-local", "fc00::1": "unique-local", "fd12::1": "unique-local",
		"224.0.0.1": "multicast", "ff02::1": "multicast", "0.0.0.0": "unspecified", "::": "unspecified",
		"255.255.255.255": "broadcast", "::ffff:10.0.0.1": "private", "64:ff9b::7f00:1": "NAT64",
	} {
		if got := AddressClass(netip.MustParseAddr(a)); got != want {
			t.Errorf("AddressClass(%s) = %q, want %q", a, got, want)
		}
	}
}

func FuzzParseNetRule(f *testing.F) {
	for _, s := range []string{"pypi.org", "*.example.com:443", "10.0.0.0/8", "[fd00::/8]:443", "[::1]:80", "::1", "127.1", "https://x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseNetRule(s)
		if err != nil {
			return
		}
		if r.IsIP() == (r.Host != "") {
			t.Fatalf("%q: rule is both or neither IP and host: %+v", s, r)
		}
		if r.Host != "" {
			if h, ip, err := ParseNetHost(r.Host); err != nil || ip.IsValid() || h != r.Host {
				t.Fatalf("%q: host %q does not round-trip: %q %v %v", s, r.Host, h, ip, err)
			}
		}
		if r.IsIP() && r.Prefix.Addr().Is4In6() {
			t.Fatalf("%q: IPv4-mapped rule accepted", s)
		}
	})
}

func TestExplainConnect(t *testing.T) {
	p := netPolicy(t, `network: {allow: ["pypi.org", "10.0.0.5:8080"]}`)
	var b strings.Builder
	for _, c := range []struct{ target, want string }{
		{"pypi.org:443", "allow: pypi.org:443 allowed by network.allow[0] \"pypi.org\"\n  the proxy then resolves"},
		{"10.0.0.5:8080", "allow: 10.0.0.5:8080 allowed by network.allow[1] \"10.0.0.5:8080\"\n"},
		{"0x7f.1:80", "deny: \"0x7f.1:80\" refused: bad or ambiguous target"},
		{"pypi.org", "deny: \"pypi.org\" refused: bad or ambiguous target: missing port"},
	} {
		b.Reset()
		d := p.ExplainConnect(c.target)
		if err := p.WriteNetExplanation(&b, d); err != nil || !strings.HasPrefix(b.String(), c.want) {
			t.Errorf("%s: got %q, want prefix %q", c.target, b.String(), c.want)
		}
	}
	b.Reset()
	if err := WriteNetExplanationJSON(&b, p.ExplainConnect("example.com:443")); err != nil ||
		b.String() != `{"decision":"deny","reason":"example.com:443 refused: not in network.allow","rule":"network.allow","target":"example.com:443"}`+"\n" {
		t.Errorf("json %q %v", b.String(), err)
	}
}
