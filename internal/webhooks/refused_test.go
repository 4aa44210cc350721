package webhooks_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/payments-api/payments-api/internal/webhooks"
	"golang.org/x/net/dns/dnsmessage"
	"golang.org/x/net/idna"
)

// TestSendRefusesOnlyWhenEveryAddressIs: a refusal fails the delivery at once only when no
// address of the host may be dialled. Private networks are allowed, so the receiver's loopback
// address may be, and the metadata addresses may not.
//
// The dialer returns the first address's error, but Go's resolver sorts an answer by RFC 6724,
// which puts loopback ahead of the metadata address: a name listed with both reaches the closed
// port first. The rows whose dial sees only the refusal, and that fail without the second
// lookup, are a round-robin name (one address per lookup) and a name that stops resolving.
func TestSendRefusesOnlyWhenEveryAddressIs(t *testing.T) {
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close() // nothing listens on its port now
	_, port, _ := net.SplitHostPort(closed.Listener.Addr().String())
	var (
		loopback = netip.MustParseAddr("127.0.0.1")
		metadata = netip.MustParseAddr("169.254.169.254")
		aws6     = netip.MustParseAddr("fd00:ec2::254")
	)
	cases := []struct {
		name    string
		host    string
		lookups [][]netip.Addr // the host's answer to each lookup in turn
		outcome webhooks.Outcome
		reason  string // "" when it depends on the resolver's order
	}{
		{"every address refused", "lb.test", [][]netip.Addr{{metadata, aws6}}, webhooks.Refused, "the address is not allowed"},
		{"a refused literal", "169.254.169.254", nil, webhooks.Refused, "the address is not allowed"},
		{"an internationalized name, refused", "bücher.test", [][]netip.Addr{{metadata}}, webhooks.Refused, "the address is not allowed"},
		{"refused and allowed in one answer", "lb.test", [][]netip.Addr{{metadata, loopback}}, webhooks.Retry, ""},
		{"refused, then allowed (round robin)", "lb.test", [][]netip.Addr{{metadata}, {loopback}}, webhooks.Retry, "the request failed"},
		{"refused, then no longer resolving", "lb.test", [][]netip.Addr{{metadata}, {}}, webhooks.Retry, "the request failed"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			name, err := idna.Lookup.ToASCII(tc.host) // as net/http looks it up
			if err != nil {
				t.Fatal(err)
			}
			sender := webhooks.NewSender(webhooks.SenderOptions{
				Timeout: 2 * time.Second, AllowPrivateNetworks: true, Resolver: dnsLookups(name, tc.lookups...),
			})
			res := sender.Send(context.Background(), webhooks.Message{
				URL: "http://" + net.JoinHostPort(tc.host, port) + "/hook", ID: "msg_lb", Body: body, Secrets: []string{webhooks.NewSecret()},
			}, time.Now())
			if res.Outcome != tc.outcome || (tc.reason != "" && res.Error != tc.reason) {
				t.Fatalf("result %+v, want outcome %v, reason %q", res, tc.outcome, tc.reason)
			}
		})
	}
}

// dnsLookups is a resolver that answers from names alone, never from the network: the k-th
// lookup of name gets lookups[k] (round robin), any other name does not exist. A lookup asks
// for A and AAAA records at once; each type is counted on its own.
func dnsLookups(name string, lookups ...[]netip.Addr) *net.Resolver {
	var (
		mu    sync.Mutex
		asked = map[dnsmessage.Type]int{}
	)
	answer := func(q dnsmessage.Question) ([]netip.Addr, bool) {
		if n := strings.TrimSuffix(q.Name.String(), "."); n != name || len(lookups) == 0 {
			return nil, false
		}
		mu.Lock()
		defer mu.Unlock()
		k := asked[q.Type] % len(lookups)
		asked[q.Type]++
		return lookups[k], true
	}
	return resolverAnswering(answer)
}
