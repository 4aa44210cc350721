package ratelimit

import (
	"net"
	"net/netip"

	"github.com/labstack/echo/v4"
)

// ClientIPExtractor is how echo's RealIP finds a request's client. With no trusted proxy it
// is the connection's address alone. Behind proxies (TRUSTED_PROXIES), each of which appends
// the address it saw connect to X-Forwarded-For, the client is the first address, read from
// the right, that is not one of them: the entries further left are whatever the client sent.
// Nothing else is trusted, not even loopback or private networks (echo's defaults).
func ClientIPExtractor(trusted []netip.Prefix) echo.IPExtractor {
	if len(trusted) == 0 {
		return echo.ExtractIPDirect()
	}
	opts := []echo.TrustOption{echo.TrustLoopback(false), echo.TrustLinkLocal(false), echo.TrustPrivateNet(false)}
	for _, p := range trusted {
		opts = append(opts, echo.TrustIPRange(&net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}))
	}
	return echo.ExtractIPFromXFFHeader(opts...)
}

// ClientPrefix is the block of addresses one client holds: the IPv4 address, or the IPv6
// /64, since one host is usually given a whole /64 and could otherwise have a full quota
// from each of its addresses. Both the per-address rate limits and the per-client
// connection limit count by it.
func ClientPrefix(addr netip.Addr) netip.Prefix {
	addr = addr.Unmap() // an IPv4 client of a dual-stack socket is ::ffff:a.b.c.d
	bits := 64
	if addr.Is4() {
		bits = 32
	}
	client, _ := addr.Prefix(bits) // cannot fail: bits fits either family, and a zone is dropped
	return client
}

// ClientKey is the bucket key of the client at ip, as ClientIPExtractor finds it (never a
// header an untrusted client could vary): its ClientPrefix, an IPv4 one written as the bare
// address. A string that is not an address is its own key.
func ClientKey(ip string) string {
	addr, err := netip.ParseAddr(ip)
	if err != nil {
		return ip
	}
	client := ClientPrefix(addr)
	if client.Addr().Is4() {
		return client.Addr().String()
	}
	return client.String()
}
