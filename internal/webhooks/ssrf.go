package webhooks

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"syscall"

	"code.dny.dev/ssrf"
)

// ErrAddressRefused is a destination the SSRF guard will not dial. A delivery is not retried
// when every address of its host is refused: the answer would be the same next time.
var ErrAddressRefused = errors.New("destination address refused")

// neverDialled are refused in every mode, WEBHOOK_ALLOW_PRIVATE_NETWORKS included: the
// link-local ranges, which hold the cloud metadata services at 169.254.169.254, and the
// metadata addresses outside them.
var neverDialled = []netip.Prefix{
	netip.MustParsePrefix("169.254.0.0/16"),     // IPv4 link-local: AWS, GCP, Azure, OpenStack metadata
	netip.MustParsePrefix("fe80::/10"),          // IPv6 link-local
	netip.MustParsePrefix("fd00:ec2::254/128"),  // AWS metadata over IPv6, inside fc00::/7
	netip.MustParsePrefix("100.100.100.200/32"), // Alibaba Cloud metadata
	netip.MustParsePrefix("168.63.129.16/32"),   // Azure WireServer, in a public range
}

// privateNetworks are all that WEBHOOK_ALLOW_PRIVATE_NETWORKS opens, for receivers on a
// developer's machine or network: loopback, RFC 1918 and unique local (fc00::/7) addresses.
var privateNetworks = []netip.Prefix{
	netip.MustParsePrefix("127.0.0.0/8"),
	netip.MustParsePrefix("::1/128"),
	netip.MustParsePrefix("10.0.0.0/8"),
	netip.MustParsePrefix("172.16.0.0/12"),
	netip.MustParsePrefix("192.168.0.0/16"),
	netip.MustParsePrefix("fc00::/7"),
}

// guardian refuses every address that is not globally reachable, kept in sync with the IANA
// special-purpose registries by the ssrf library: loopback, private (RFC 1918, fc00::/7),
// link-local, CGNAT 100.64/10, multicast, unspecified, reserved and documentation ranges, and
// all IPv6 outside 2000::/3, which refuses IPv4-mapped (::ffff:127.0.0.1), IPv4-compatible and
// NAT64 forms. Only its address check is used: receivers choose their ports.
var guardian = ssrf.New(ssrf.WithAnyPort())

// checkAddr reports whether a webhook may be sent to ip. Link-local and metadata addresses
// are refused first, so allowing private networks can never open them (fd00:ec2::254 is a
// unique local address); then private networks are let through if allowed; everything else
// must be globally reachable.
func checkAddr(ip netip.Addr, allowPrivate bool) error {
	plain := ip.Unmap().WithZone("")
	if containsAddr(neverDialled, plain) {
		return fmt.Errorf("%w: %s is link-local or a cloud metadata address", ErrAddressRefused, ip)
	}
	if allowPrivate && containsAddr(privateNetworks, plain) {
		return nil
	}
	if err := guardian.SafeAddr(ip); err != nil {
		return fmt.Errorf("%w: %w", ErrAddressRefused, err)
	}
	return nil
}

func containsAddr(prefixes []netip.Prefix, ip netip.Addr) bool {
	return slices.ContainsFunc(prefixes, func(p netip.Prefix) bool { return p.Contains(ip) })
}

// dialControl returns the net.Dialer Control hook: it runs after name resolution, on the
// address about to be connected, so neither DNS rebinding nor a name that resolves to a
// refused address can get past it.
func dialControl(allowPrivate bool) func(network, address string, _ syscall.RawConn) error {
	return func(_, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return fmt.Errorf("%w: cannot parse %q", ErrAddressRefused, address)
		}
		return checkAddr(ap.Addr(), allowPrivate)
	}
}
