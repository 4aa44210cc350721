package ratelimit

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"

	"github.com/labstack/echo/v4"
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

// TestBehindAProxyOnlyItIsTrusted protects the refusal of echo's default trust of private
// networks (TrustPrivateNet(false)): behind a trusted proxy, an X-Forwarded-For entry that is
// a private address the client wrote is the client, not a hop to skip. Trusting private
// networks would let a client pick its rate-limit bucket by sending
// "X-Forwarded-For: <any address>, 10.0.0.1".
func TestBehindAProxyOnlyItIsTrusted(t *testing.T) {
	extract := ClientIPExtractor([]netip.Prefix{netip.MustParsePrefix("192.0.2.10/32")})
	for _, tt := range []struct{ xff, want string }{
		{"203.0.113.9", "203.0.113.9"},
		{"198.51.100.1, 10.0.0.5", "10.0.0.5"},
		{"198.51.100.1, 127.0.0.1", "127.0.0.1"},
		{"198.51.100.1, 169.254.1.1", "169.254.1.1"},
	} {
		req := httptest.NewRequestWithContext(t.Context(), http.MethodGet, "/", nil)
		req.RemoteAddr = "192.0.2.10:4000"
		req.Header.Set(echo.HeaderXForwardedFor, tt.xff)
		if got := extract(req); got != tt.want {
			t.Errorf("X-Forwarded-For %q through the trusted proxy: client %s, want %s", tt.xff, got, tt.want)
		}
	}
}
