package webhooks

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/payments-api/payments-api/internal/domain"
)

// TestDialRefusesPrivateAddresses dials each address through the guarded dialer the sender
// uses: the Control hook sees the resolved address just before connect and refuses it, so
// nothing is ever sent to it.
func TestDialRefusesPrivateAddresses(t *testing.T) {
	refused := []string{
		"127.0.0.1", "::1", "10.0.0.1", "172.16.0.1", "192.168.1.1", "169.254.169.254",
		"100.64.0.1", "0.0.0.0", "::ffff:127.0.0.1", "fd00::1", "::", "::127.0.0.1",
		"fe80::1", "224.0.0.1", "ff02::1", "100.100.100.200", "168.63.129.16", "fd00:ec2::254",
		"64:ff9b::7f00:1", "255.255.255.255",
	}
	dialer := &net.Dialer{Timeout: time.Second, Control: dialControl}
	for _, addr := range refused {
		t.Run(addr, func(t *testing.T) {
			conn, err := dialer.DialContext(context.Background(), "tcp", net.JoinHostPort(addr, "443"))
			if err == nil {
				conn.Close()
				t.Fatal("dialled")
			}
			if !errors.Is(err, ErrAddressRefused) {
				t.Fatalf("want ErrAddressRefused, got %v", err)
			}
		})
	}
}

// TestDialRefusesAHostnameResolvingToLoopback: the check is on the address dialled, not on
// the name in the URL. A receiver listens on 127.0.0.1 and must never see the request.
func TestDialRefusesAHostnameResolvingToLoopback(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits.Add(1) }))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())

	res := NewSender(SenderOptions{Timeout: 2 * time.Second}).Send(context.Background(), Message{
		URL: "http://localhost:" + port + "/hook", ID: "msg_1", Body: []byte(`{}`), Secrets: []string{NewSecret()},
	}, time.Now())
	if res.Outcome != Refused || !strings.Contains(res.Error, "refused") {
		t.Fatalf("outcome %v, error %q; want Refused", res.Outcome, res.Error)
	}
	if hits.Load() != 0 {
		t.Fatal("the loopback receiver was reached")
	}
}

// TestPublicAddressesPassTheCheck calls the hook without dialling: no test reaches the internet.
func TestPublicAddressesPassTheCheck(t *testing.T) {
	for _, addr := range []string{"93.184.215.14:443", "[2606:4700:4700::1111]:8443", "8.8.8.8:80"} {
		network := "tcp4"
		if strings.HasPrefix(addr, "[") {
			network = "tcp6"
		}
		if err := dialControl(network, addr, nil); err != nil {
			t.Errorf("%s refused: %v", addr, err)
		}
	}
}

func TestURLPolicy(t *testing.T) {
	strict := URLPolicy{Resolver: localResolver()}
	lax := URLPolicy{AllowPrivateNetworks: true}
	cases := []struct {
		policy URLPolicy
		url    string
		ok     bool
	}{
		{strict, "https://93.184.215.14/hook", true},
		{strict, "https://receiver.invalid/hook", true}, // does not resolve now: the dial check guards it
		{strict, "https://localhost:8443/hook", false},  // resolves only to loopback
		{strict, "https://127.0.0.1/hook", false},
		{strict, "https://[::ffff:10.0.0.1]/hook", false},
		{strict, "https://169.254.169.254/latest/meta-data", false},
		{strict, "http://93.184.215.14/hook", false},
		{strict, "ftp://93.184.215.14/hook", false},
		{strict, "not a url", false},
		{strict, "/relative/path", false},
		{strict, "https://user:pass@93.184.215.14/hook", false},
		{lax, "http://127.0.0.1:3000/hook", true},
		{lax, "ftp://127.0.0.1/hook", false},
	}
	for _, tc := range cases {
		err := tc.policy.Check(context.Background(), tc.url)
		var ve *domain.ValidationError
		switch {
		case tc.ok && err != nil:
			t.Errorf("%s (private allowed: %v): refused: %v", tc.url, tc.policy.AllowPrivateNetworks, err)
		case !tc.ok && (!errors.As(err, &ve) || ve.Field != "/url"):
			t.Errorf("%s (private allowed: %v): %v, want a validation error on /url", tc.url, tc.policy.AllowPrivateNetworks, err)
		}
	}
}

// localResolver answers from /etc/hosts only (localhost), never from the network.
func localResolver() *net.Resolver {
	return &net.Resolver{PreferGo: true, Dial: func(context.Context, string, string) (net.Conn, error) {
		return nil, errors.New("no DNS in tests")
	}}
}

func TestCheckAddrAllowsGlobalUnicast(t *testing.T) {
	if err := CheckAddr(netip.MustParseAddr("1.1.1.1")); err != nil {
		t.Fatal(err)
	}
	if err := CheckAddr(netip.MustParseAddr("::ffff:1.1.1.1")); !errors.Is(err, ErrAddressRefused) {
		t.Fatalf("IPv4-mapped form passed: %v", err)
	}
}
