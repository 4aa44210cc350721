package webhooks

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"syscall"
	"time"

	"code.dny.dev/ssrf"
	"github.com/payments-api/payments-api/internal/domain"
)

// ErrAddressRefused is a destination the SSRF guard will not dial. A delivery refused for it
// is not retried: the answer would be the same next time.
var ErrAddressRefused = errors.New("destination address refused")

// guardian refuses every address that is not globally reachable, kept in sync with the IANA
// special-purpose registries by the ssrf library: loopback, private (RFC 1918, fc00::/7),
// link-local (which holds the 169.254.169.254 metadata service), CGNAT 100.64/10 (Alibaba's
// metadata at 100.100.100.200), multicast, unspecified, reserved and documentation ranges, and
// all IPv6 outside 2000::/3, which refuses IPv4-mapped (::ffff:127.0.0.1), IPv4-compatible and
// NAT64 forms, and AWS's fd00:ec2::254. Any port is allowed: receivers choose theirs.
var guardian = ssrf.New(ssrf.WithAnyPort(), ssrf.WithDeniedV4Prefixes(cloudMetadataV4...))

// cloudMetadataV4 are metadata addresses inside public ranges, which no registry lists.
var cloudMetadataV4 = []netip.Prefix{
	netip.MustParsePrefix("168.63.129.16/32"), // Azure WireServer
}

// dialControl is the net.Dialer Control hook: it runs after name resolution, on the address
// about to be connected, so neither DNS rebinding nor a redirect to a name that resolves
// privately can get past it.
func dialControl(network, address string, _ syscall.RawConn) error {
	if err := guardian.Safe(network, address, nil); err != nil {
		return fmt.Errorf("%w: %w", ErrAddressRefused, err)
	}
	return nil
}

// CheckAddr reports whether ip may be dialled by a sender that does not allow private networks.
func CheckAddr(ip netip.Addr) error {
	if err := guardian.SafeAddr(ip); err != nil {
		return fmt.Errorf("%w: %w", ErrAddressRefused, err)
	}
	return nil
}

// resolveTimeout bounds the DNS lookup made when an endpoint is registered.
const resolveTimeout = 2 * time.Second

// URLPolicy checks endpoint URLs when they are registered or changed.
type URLPolicy struct {
	AllowPrivateNetworks bool          // local development: http, and any address
	Resolver             *net.Resolver // nil: net.DefaultResolver
}

// Check refuses a URL the sender would never deliver to, as a validation error on /url: not
// absolute, not https (http only with private networks allowed), carrying credentials, or
// naming a host whose every address is refused. A name that does not resolve now is
// accepted; the check at dial time still guards every attempt.
func (p URLPolicy) Check(ctx context.Context, raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.Hostname() == "" {
		return invalidURL("must be an absolute https URL")
	}
	switch {
	case u.Scheme == "https":
	case u.Scheme == "http" && p.AllowPrivateNetworks:
	default:
		return invalidURL("must use https")
	}
	if u.User != nil {
		return invalidURL("must not contain credentials")
	}
	if p.AllowPrivateNetworks {
		return nil
	}
	addrs, ok := p.resolve(ctx, u.Hostname())
	if !ok {
		return nil
	}
	for _, a := range addrs {
		if CheckAddr(a) == nil {
			return nil
		}
	}
	return invalidURL(fmt.Sprintf("%s resolves only to addresses webhooks are never sent to (private, loopback, link-local or metadata)", u.Hostname()))
}

func (p URLPolicy) resolve(ctx context.Context, host string) ([]netip.Addr, bool) {
	if ip, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{ip}, true
	}
	r := p.Resolver
	if r == nil {
		r = net.DefaultResolver
	}
	ctx, cancel := context.WithTimeout(ctx, resolveTimeout)
	defer cancel()
	addrs, err := r.LookupNetIP(ctx, "ip", host)
	return addrs, err == nil && len(addrs) > 0
}

func invalidURL(msg string) error {
	return &domain.ValidationError{Field: "/url", Message: msg}
}
