package policy

import (
	"net/netip"
	"strings"
)

// specialRanges are the address ranges a proxied connection may reach only
// when an IP or CIDR rule of network.allow names them. Order matters: the
// first match names the class (metadata before link-local).
var specialRanges = []struct {
	prefix netip.Prefix
	class  string
}{
	{netip.MustParsePrefix("169.254.169.254/32"), "cloud metadata"},
	{netip.MustParsePrefix("fd00:ec2::254/128"), "cloud metadata"},
	{netip.MustParsePrefix("100.100.100.200/32"), "cloud metadata"},
	{netip.MustParsePrefix("0.0.0.0/8"), "unspecified"},
	{netip.MustParsePrefix("::/128"), "unspecified"},
	{netip.MustParsePrefix("127.0.0.0/8"), "loopback"},
	{netip.MustParsePrefix("::1/128"), "loopback"},
	{netip.MustParsePrefix("10.0.0.0/8"), "private"},
	{netip.MustParsePrefix("172.16.0.0/12"), "private"},
	{netip.MustParsePrefix("192.168.0.0/16"), "private"},
	{netip.MustParsePrefix("100.64.0.0/10"), "CGNAT"},
	{netip.MustParsePrefix("169.254.0.0/16"), "link-local"},
	{netip.MustParsePrefix("fe80::/10"), "link-local"},
	{netip.MustParsePrefix("fec0::/10"), "site-local"},
	{netip.MustParsePrefix("fc00::/7"), "unique-local"},
	{netip.MustParsePrefix("224.0.0.0/4"), "multicast"},
	{netip.MustParsePrefix("ff00::/8"), "multicast"},
	{netip.MustParsePrefix("255.255.255.255/32"), "broadcast"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved"},
	{netip.MustParsePrefix("192.0.0.0/24"), "reserved"},
	{netip.MustParsePrefix("198.18.0.0/15"), "benchmarking"},
	{netip.MustParsePrefix("64:ff9b::/96"), "NAT64"},
	{netip.MustParsePrefix("64:ff9b:1::/48"), "NAT64"},
	{netip.MustParsePrefix("2002::/16"), "6to4"},
	{netip.MustParsePrefix("2001::/32"), "Teredo"},
	{netip.MustParsePrefix("::/96"), "IPv4-compatible"},
	{netip.MustParsePrefix("::ffff:0:0/96"), "IPv4-mapped"},
}

// AddressClass names the special range a holds ("loopback", "private",
// "cloud metadata", ...), or "" for an ordinary public address. An invalid
// address or one with a zone is "invalid". IPv4-mapped IPv6 addresses are
// classed as their IPv4 address.
func AddressClass(a netip.Addr) string {
	if !a.IsValid() {
		return "invalid"
	}
	if a.Zone() != "" {
		return "zoned"
	}
	a = a.Unmap()
	for _, r := range specialRanges {
		if r.prefix.Contains(a) {
			return r.class
		}
	}
	return ""
}

// metadataNames are host names of cloud metadata services. They are
// refused unless an IP or CIDR rule names the address they resolve to.
var metadataNames = []string{"metadata.google.internal", "metadata.goog", "metadata", "instance-data", "instance-data.ec2.internal"}

// IsMetadataName reports whether host names a cloud metadata service.
func IsMetadataName(host string) bool {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	for _, n := range metadataNames {
		if host == n {
			return true
		}
	}
	return false
}
