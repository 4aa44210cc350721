package main

import (
	"context"
	"log/slog"
	"net"
	"runtime"
	"testing"
	"time"
)

// TestLimitListenerForgetsClosedClients counts connections per client on a real listener: the
// one over a client's cap is refused while another client is admitted, and once every
// connection is closed (one of them twice) nothing is left counted, so addresses that come
// and go cannot grow the map.
func TestLimitListenerForgetsClosedClients(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("needs a second loopback address: Linux routes all of 127.0.0.0/8 to lo")
	}
	inner, err := new(net.ListenConfig).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_ = inner.(*net.TCPListener).SetDeadline(time.Now().Add(5 * time.Second)) // Accept cannot hang the test
	l := limitConnections(inner, 10, 2, slog.New(slog.DiscardHandler)).(*limitListener)
	defer l.Close()

	var accepted []net.Conn
	for _, from := range []string{"127.0.0.1", "127.0.0.1", "127.0.0.1", "127.0.0.2"} {
		dialFrom(t, from, l.Addr().String(), "")
	}
	// The third from 127.0.0.1 is refused inside Accept, which returns 127.0.0.2's next.
	for range 3 {
		conn, err := l.Accept()
		if err != nil {
			t.Fatal(err)
		}
		accepted = append(accepted, conn)
	}
	if got := accepted[2].RemoteAddr().(*net.TCPAddr).IP.String(); got != "127.0.0.2" {
		t.Fatalf("third accepted connection from %s, want 127.0.0.2", got)
	}
	if got := l.overPerClient.total.Load(); got != 1 {
		t.Errorf("%d refused over MAX_CONNECTIONS_PER_IP, want 1", got)
	}
	l.mu.Lock()
	open, perClient := l.open, len(l.perClient)
	l.mu.Unlock()
	if open != 3 || perClient != 2 {
		t.Errorf("counted %d connections from %d clients, want 3 from 2", open, perClient)
	}

	accepted[0].Close()
	for _, conn := range accepted {
		conn.Close()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open != 0 || len(l.perClient) != 0 {
		t.Errorf("after every connection closed: %d open, clients %v", l.open, l.perClient)
	}
}

func TestClientOf(t *testing.T) {
	tests := []struct {
		addr net.Addr
		want string
	}{
		{&net.TCPAddr{IP: net.ParseIP("203.0.113.7"), Port: 1234}, "203.0.113.7/32"},
		{&net.TCPAddr{IP: net.ParseIP("::ffff:203.0.113.7"), Port: 1234}, "203.0.113.7/32"}, // dual-stack socket
		{&net.TCPAddr{IP: net.ParseIP("2001:db8:1:2:aaaa::1"), Port: 1234}, "2001:db8:1:2::/64"},
		{&net.TCPAddr{IP: net.ParseIP("2001:db8:1:2:bbbb::9"), Port: 1234}, "2001:db8:1:2::/64"}, // same host's /64
		{&net.TCPAddr{IP: net.ParseIP("fe80::1"), Zone: "eth0", Port: 1234}, "fe80::/64"},
		{&net.UnixAddr{Name: "/run/payments.sock", Net: "unix"}, "invalid Prefix"}, // bound by MAX_CONNECTIONS alone
	}
	for _, tt := range tests {
		if got := clientOf(tt.addr).String(); got != tt.want {
			t.Errorf("clientOf(%s) = %s, want %s", tt.addr, got, tt.want)
		}
	}
}
