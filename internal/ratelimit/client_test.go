package ratelimit

import (
	"net/netip"
	"testing"
)

// TestClientKey: an IPv4 client is its address; an IPv6 client is its /64, so one host
// cannot have a quota from each of its addresses.
func TestClientKey(t *testing.T) {
	for _, tt := range []struct{ ip, want string }{
		{"203.0.113.7", "203.0.113.7"},
		{"::ffff:203.0.113.7", "203.0.113.7"}, // an IPv4 client of a dual-stack socket
		{"2001:db8:1:2:aaaa::1", "2001:db8:1:2::/64"},
		{"2001:db8:1:2:bbbb::9", "2001:db8:1:2::/64"}, // the same host's /64
		{"2001:db8:1:3::1", "2001:db8:1:3::/64"},
		{"not an address", "not an address"},
	} {
		if got := ClientKey(tt.ip); got != tt.want {
			t.Errorf("ClientKey(%q) = %q, want %q", tt.ip, got, tt.want)
		}
	}
}

func TestClientPrefix(t *testing.T) {
	for _, tt := range []struct{ addr, want string }{
		{"203.0.113.7", "203.0.113.7/32"},
		{"::ffff:203.0.113.7", "203.0.113.7/32"},
		{"2001:db8:1:2:aaaa::1", "2001:db8:1:2::/64"},
		{"fe80::1%eth0", "fe80::/64"},
	} {
		if got := ClientPrefix(netip.MustParseAddr(tt.addr)).String(); got != tt.want {
			t.Errorf("ClientPrefix(%s) = %s, want %s", tt.addr, got, tt.want)
		}
	}
}
