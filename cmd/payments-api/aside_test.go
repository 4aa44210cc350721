package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/payments-api/payments-api/internal/testing/integration"
)

// TestAsideListenersCloseIdleConnections: a listener aside (here PPROF_ADDR's) closes a
// keep-alive connection left idle for IDLE_TIMEOUT, as the API's listener does. Without an
// IdleTimeout, net/http waits for the connection's next request for ever.
func TestAsideListenersCloseIdleConnections(t *testing.T) {
	t.Parallel()
	addr := "127.0.0.1:" + integration.FreePort(t)
	stop, err := servePprof(t.Context(), addr, 200*time.Millisecond, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	conn, err := new(net.Dialer).DialContext(t.Context(), "tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := fmt.Fprint(conn, "GET /debug/pprof/cmdline HTTP/1.1\r\nHost: aside\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(conn)
	res, err := http.ReadResponse(r, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, res.Body)
	_ = res.Body.Close()
	if res.StatusCode != http.StatusOK || res.Close {
		t.Fatalf("GET /debug/pprof/cmdline: %d (closing: %v), want 200 on a kept-alive connection", res.StatusCode, res.Close)
	}

	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second)) // the test's own bound
	idle := time.Now()
	if _, err := r.ReadByte(); !errors.Is(err, io.EOF) {
		t.Fatalf("the idle connection after %s: %v, want it closed by the listener", time.Since(idle).Round(time.Millisecond), err)
	}
}
