package webhooks

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
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
	dialer := &net.Dialer{Timeout: time.Second, Control: dialControl(false)}
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

// TestDialControlByMode is the check the dialer's Control hook makes on every address it is
// about to connect, with and without private networks allowed. Allowing them opens loopback,
// RFC 1918 and unique local addresses only: never link-local or metadata, even the AWS one
// inside fc00::/7.
func TestDialControlByMode(t *testing.T) {
	cases := []struct {
		addr        string
		strict, lax bool // allowed without, and with, private networks
	}{
		{"169.254.169.254", false, false},
		{"169.254.1.1", false, false},
		{"::ffff:169.254.169.254", false, false},
		{"fe80::1", false, false},
		{"fe80::1%eth0", false, false},
		{"fd00:ec2::254", false, false},
		{"100.100.100.200", false, false},
		{"168.63.129.16", false, false},
		{"100.64.0.1", false, false},
		{"0.0.0.0", false, false},
		{"::", false, false},
		{"224.0.0.1", false, false},
		{"255.255.255.255", false, false},
		{"127.0.0.1", false, true},
		{"127.1.2.3", false, true},
		{"::1", false, true},
		{"::ffff:127.0.0.1", false, true},
		{"10.0.0.1", false, true},
		{"172.16.0.1", false, true},
		{"192.168.1.1", false, true},
		{"fd00::1", false, true},
		{"93.184.215.14", true, true},
		{"2606:4700:4700::1111", true, true},
		{"::ffff:93.184.215.14", false, false}, // an IPv4-mapped form is never dialled as such
	}
	for _, tc := range cases {
		address := net.JoinHostPort(tc.addr, "8443")
		for _, allowPrivate := range []bool{false, true} {
			want := tc.strict
			if allowPrivate {
				want = tc.lax
			}
			err := dialControl(allowPrivate)("tcp", address, nil)
			if want != (err == nil) || (err != nil && !errors.Is(err, ErrAddressRefused)) {
				t.Errorf("%s (private allowed: %v): %v, want allowed: %v", address, allowPrivate, err, want)
			}
		}
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
	if res.Outcome != Refused || res.Error != "the address is not allowed" {
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
		if err := dialControl(false)(network, addr, nil); err != nil {
			t.Errorf("%s refused: %v", addr, err)
		}
	}
}

// TestTheSenderUsesNoProxy: a proxy (HTTPS_PROXY, say, which http.DefaultTransport obeys)
// would make the connection itself, to an address the dialer's Control hook never sees, so
// the sender's transport has none.
func TestTheSenderUsesNoProxy(t *testing.T) {
	s := NewSender(SenderOptions{})
	transport, ok := s.client.Transport.(*http.Transport)
	if !ok || transport.Proxy != nil {
		t.Errorf("the sender's transport is %T with a proxy function: a proxy would dial past the address check", s.client.Transport)
	}
}
