package webhooks

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/payments-api/payments-api/internal/domain"
	"golang.org/x/net/idna"
)

// resolveTimeout bounds the DNS lookup made when an endpoint is registered.
const resolveTimeout = 2 * time.Second

// URLPolicy checks endpoint URLs when they are registered or changed, by the rules the
// sender's dialer applies later, so a URL it would refuse is refused up front.
type URLPolicy struct {
	AllowPrivateNetworks bool          // local development: http, loopback and private addresses
	Resolver             *net.Resolver // nil: net.DefaultResolver
}

// Check refuses a URL the sender would never deliver to, as a validation error on /url: not
// absolute, not https (http only with private networks allowed), carrying credentials, a
// port outside 1 to 65535, an address in disguise (see dialledHost), or a host whose every
// address is refused. A name that does not resolve now is accepted; the check at dial time
// still guards every attempt.
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
	if port := u.Port(); port != "" {
		// url.Parse takes any digits; a port no socket has would fail every attempt.
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return invalidURL("the port must be between 1 and 65535")
		}
	}
	host, err := dialledHost(u.Hostname())
	if err != nil {
		return err
	}
	addrs, ok := p.addresses(ctx, host)
	if !ok {
		return nil
	}
	for _, a := range addrs {
		if checkAddr(a, p.AllowPrivateNetworks) == nil {
			return nil
		}
	}
	subject := host + " resolves only to addresses"
	if _, err := netip.ParseAddr(host); err == nil || host == "localhost" {
		subject = host + " is an address"
	}
	never := "private, loopback, link-local, metadata or reserved"
	if p.AllowPrivateNetworks {
		never = "link-local, metadata or reserved"
	}
	return invalidURL(fmt.Sprintf("%s webhooks are never sent to (%s)", subject, never))
}

// dialledHost returns the host the sender will look up (lower case, and in the ASCII form
// net/http dials for an internationalized name), and refuses a host that is an address in
// disguise, in every mode:
//   - a number written otherwise than as a dotted quad (2130706433, 0x7f.1, 0177.0.0.1,
//     127.1, 127.0.0.1.), which inet_aton and some resolvers read as an address;
//   - a name the system resolver answers from this machine rather than DNS (localhost.,
//     *.localhost, localhost.localdomain, systemd's _gateway and _outbound). Only plain
//     localhost is accepted, as the loopback address it is (refused unless private networks
//     are allowed);
//   - a non-ASCII host that maps to any of these, or to an address.
func dialledHost(written string) (string, error) {
	host := strings.ToLower(written)
	ascii, mapped := host, false
	if !isASCII(host) { // as net/http does: an ASCII host is dialled as written
		var err error
		if ascii, err = idna.Lookup.ToASCII(host); err != nil {
			return "", invalidURL("the host is not a valid domain name")
		}
		mapped = true
	}
	_, err := netip.ParseAddr(ascii)
	literal := err == nil
	switch {
	case literal && !mapped:
		return ascii, nil
	case literal || endsInNumber(ascii):
		return "", invalidURL(fmt.Sprintf("%s is not an IP address in canonical form: write IPv4 as four decimal numbers, such as 192.0.2.1", written))
	case ascii == "localhost" && !mapped:
		return ascii, nil
	case isLocalName(ascii):
		return "", invalidURL(fmt.Sprintf("%s is answered by this machine, not DNS: write loopback as localhost or 127.0.0.1", written))
	}
	return ascii, nil
}

func isASCII(s string) bool {
	return !strings.ContainsFunc(s, func(r rune) bool { return r >= utf8.RuneSelf })
}

// endsInNumber reports whether host's last label is a number (decimal, or hex after 0x), the
// WHATWG URL test for a host meant as an IPv4 address. No top-level domain is numeric.
func endsInNumber(host string) bool {
	host = strings.TrimSuffix(host, ".")
	last := host[strings.LastIndexByte(host, '.')+1:]
	if hex, ok := strings.CutPrefix(last, "0x"); ok {
		return strings.Trim(hex, "0123456789abcdef") == ""
	}
	return last != "" && strings.Trim(last, "0123456789") == ""
}

// isLocalName reports whether the system resolver answers host itself, with this machine's
// own addresses: RFC 6761's localhost names, and those of systemd's nss-myhostname.
func isLocalName(host string) bool {
	h := strings.TrimSuffix(host, ".")
	return h == "localhost" || strings.HasSuffix(h, ".localhost") ||
		h == "localhost.localdomain" || strings.HasSuffix(h, ".localhost.localdomain") ||
		h == "_gateway" || h == "_outbound"
}

// loopback are the addresses localhost stands for (RFC 6761), whatever a hosts file says.
var loopback = []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.IPv6Loopback()}

// addresses returns what host stands for, and false when a name does not resolve now.
func (p URLPolicy) addresses(ctx context.Context, host string) ([]netip.Addr, bool) {
	if ip, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{ip}, true
	}
	if host == "localhost" {
		return loopback, true
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
