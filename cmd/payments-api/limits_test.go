package main

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/payments-api/payments-api/internal/testing/integration"
)

// TestSlowAndIdleConnectionsAreClosed holds three connections the way an attacker (or a bad
// network) does: headers that never finish, a body that never finishes, and a keep-alive
// connection left idle. A fresh client is served while they are held, and each is closed at
// its timeout.
func TestSlowAndIdleConnectionsAreClosed(t *testing.T) {
	t.Parallel()
	const timeout = time.Second
	r := startServe(t, map[string]string{
		"READ_HEADER_TIMEOUT": timeout.String(), "READ_TIMEOUT": timeout.String(), "IDLE_TIMEOUT": timeout.String(),
	}, true)

	opened := time.Now()
	slowHeaders := dial(t, r.addr, "GET /healthz HTTP/1.1\r\nHost: test\r\n") // no blank line: headers never end
	slowBody := dial(t, r.addr, "POST /payments HTTP/1.1\r\nHost: test\r\nAuthorization: Bearer "+testKey+
		"\r\nIdempotency-Key: slow-1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"amount\":")
	idle := dial(t, r.addr, "GET /healthz HTTP/1.1\r\nHost: test\r\n\r\n")
	idleReader := bufio.NewReader(idle)
	if res, err := http.ReadResponse(idleReader, nil); err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("keep-alive request: %v", err)
	} else {
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
	}
	idleSince := time.Now()

	if got := r.status("/healthz"); got != http.StatusOK {
		t.Errorf("a fresh client while slow ones are held: %d", got)
	}
	if held := time.Since(opened); held >= timeout {
		t.Fatalf("the fresh client took until %s, past the timeouts: the test proves nothing", held)
	}

	// The slow body is answered before its connection closes, so the client learns why.
	var answer strings.Builder
	for _, c := range []struct {
		name   string
		conn   net.Conn
		since  time.Time
		answer io.Writer
	}{
		{"slow headers", slowHeaders, opened, nil},
		{"slow body", slowBody, opened, &answer},
		{"idle keep-alive", idle, idleSince, nil},
	} {
		if after := waitClosed(t, c.name, c.conn, c.answer).Sub(c.since); after < timeout*9/10 {
			t.Errorf("%s: closed after %s, before its timeout of %s", c.name, after, timeout)
		}
	}
	if !strings.HasPrefix(answer.String(), "HTTP/1.1 400") || !strings.Contains(answer.String(), "read timeout") {
		t.Errorf("slow body answered %q, want a 400 naming the read timeout", answer.String())
	}
}

// TestWorkOutlivesTheReadTimeout: READ_TIMEOUT bounds receiving the request, not the work
// after it, which has REQUEST_TIMEOUT. (net/http cancels a request's context when a read
// fails, so a read deadline still in force during the work would cut it short.)
func TestWorkOutlivesTheReadTimeout(t *testing.T) {
	t.Parallel()
	r := startServe(t, map[string]string{"READ_HEADER_TIMEOUT": "100ms", "READ_TIMEOUT": "200ms", "PROCESSOR_LATENCY": "1s"}, true)
	res := send(t, r, http.MethodPost, "/payments", `{"amount":100,"currency":"usd","payment_method":"pm_card_visa"}`, "outlives-1")
	if res.Status != http.StatusCreated {
		t.Errorf("a charge longer than READ_BODY_TIMEOUT: %d %s", res.Status, res.Body)
	}
}

// TestConnectionLimitRefusesRatherThanDies fills MAX_CONNECTIONS with connections that send
// nothing: the next one is closed at once instead of waiting or exhausting the process, the
// refusal is logged, and a client is served again as soon as a slot frees.
func TestConnectionLimitRefusesRatherThanDies(t *testing.T) {
	t.Parallel()
	r := startServe(t, map[string]string{"MAX_CONNECTIONS": "3", "READ_HEADER_TIMEOUT": "30s", "READ_TIMEOUT": "30s"}, true)
	// The readiness checks' keep-alive connection holds a slot until the server sees it
	// closed, so a connection counts as held only once it has stayed open a while: one
	// dialled before that slot was freed is refused, and dialled again. With all three
	// held, no other connection holds a slot.
	http.DefaultClient.CloseIdleConnections()
	held := make([]net.Conn, 3)
	for i := range held {
		integration.WaitFor(t, func() bool {
			held[i] = dial(t, r.addr, "")
			return !closedWithin(held[i], 100*time.Millisecond)
		})
	}
	extra := dial(t, r.addr, "")
	if !closedWithin(extra, 2*time.Second) {
		t.Fatal("a connection beyond MAX_CONNECTIONS was kept open")
	}
	if _, err := integration.Get(context.Background(), r.base+"/healthz"); err == nil {
		t.Error("a request beyond MAX_CONNECTIONS was served")
	}
	if !r.logged(`"level":"WARN"`, "MAX_CONNECTIONS reached") {
		t.Errorf("refusals are not logged:\n%s", r.logs.String())
	}

	held[0].Close()
	integration.WaitFor(t, func() bool { return r.status("/healthz") == http.StatusOK })
	for _, c := range held[1:] {
		c.Close()
	}
}

// TestConnectionLimitPerIP holds MAX_CONNECTIONS_PER_IP idle keep-alive connections from
// 127.0.0.1: its next connection is closed unanswered while 127.0.0.2 is still served, and
// 127.0.0.1 is served again once one of its connections closes.
func TestConnectionLimitPerIP(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("needs a second loopback address: Linux routes all of 127.0.0.0/8 to lo")
	}
	r := startServe(t, map[string]string{
		"MAX_CONNECTIONS": "10", "MAX_CONNECTIONS_PER_IP": "3", "READ_HEADER_TIMEOUT": "30s", "READ_TIMEOUT": "30s",
	}, true)
	// The readiness checks' keep-alive connection holds one of 127.0.0.1's slots until the
	// server sees it closed, so the first held connection may need a retry.
	http.DefaultClient.CloseIdleConnections()
	held := make([]net.Conn, 3)
	for i := range held {
		integration.WaitFor(t, func() bool {
			held[i] = servedKeepAlive(t, "127.0.0.1", r.addr)
			return held[i] != nil
		})
	}

	extra := dialFrom(t, "127.0.0.1", r.addr, "GET /healthz HTTP/1.1\r\nHost: test\r\n\r\n")
	if !closedWithin(extra, 2*time.Second) {
		t.Fatal("a connection beyond MAX_CONNECTIONS_PER_IP was kept open or answered")
	}
	if got, err := getFrom(t, "127.0.0.2", r.base+"/healthz"); err != nil || got != http.StatusOK {
		t.Errorf("another address while 127.0.0.1 is at its cap: %d %v", got, err)
	}
	if !r.logged(`"level":"WARN"`, "MAX_CONNECTIONS_PER_IP reached", `"client":"127.0.0.1/32"`) {
		t.Errorf("refusals are not logged:\n%s", r.logs.String())
	}

	held[0].Close()
	integration.WaitFor(t, func() bool {
		got, err := getFrom(t, "127.0.0.1", r.base+"/healthz")
		return err == nil && got == http.StatusOK
	})
}

// TestShutdownCutsSlowBodies: SIGTERM while three clients trickle their bodies ends within
// seconds, not after SHUTDOWN_TIMEOUT; each is told to send again.
func TestShutdownCutsSlowBodies(t *testing.T) {
	t.Parallel()
	const shutdownTimeout = 10 * time.Second
	r := startServe(t, map[string]string{
		"SHUTDOWN_TIMEOUT": shutdownTimeout.String(), "READ_TIMEOUT": "30s", "REQUEST_TIMEOUT": "40s", "WRITE_TIMEOUT": "45s",
	}, true)

	slow := make([]net.Conn, 3)
	for i := range slow {
		// Expect: 100-continue makes the server say when the handler starts reading the body,
		// so the test knows each request is waiting on its body before it stops the server.
		slow[i] = dial(t, r.addr, "POST /payments HTTP/1.1\r\nHost: test\r\nAuthorization: Bearer "+testKey+
			"\r\nIdempotency-Key: slow-shutdown\r\nContent-Type: application/json\r\nContent-Length: 100\r\nExpect: 100-continue\r\n\r\n")
		line, err := bufio.NewReader(slow[i]).ReadString('\n')
		if err != nil || !strings.HasPrefix(line, "HTTP/1.1 100") {
			t.Fatalf("want 100 Continue, got %q (%v)", line, err)
		}
		if _, err := slow[i].Write([]byte(`{"amount":`)); err != nil {
			t.Fatal(err)
		}
	}

	stopped := time.Now()
	r.stop()
	select {
	case err := <-r.done:
		if err != nil {
			t.Errorf("serve: %v", err)
		}
		r.done <- err // for the cleanup
	case <-time.After(shutdownTimeout):
		t.Fatalf("shutdown waited %s for slow bodies", shutdownTimeout)
	}
	if took := time.Since(stopped); took > 2*time.Second {
		t.Errorf("shutdown took %s with slow bodies in flight", took)
	}
	for _, c := range slow {
		var answer strings.Builder
		waitClosed(t, "slow body", c, &answer)
		if !strings.HasPrefix(answer.String(), "HTTP/1.1 503") || !strings.Contains(answer.String(), "Retry-After") {
			t.Errorf("a cut body was answered %q, want 503 with Retry-After", answer.String())
		}
	}
}

// dial opens a raw connection and writes send on it. It is closed when t ends.
func dial(t *testing.T, addr, send string) net.Conn {
	t.Helper()
	return dialFrom(t, "", addr, send)
}

// dialFrom is dial from the local address from ("" for any).
func dialFrom(t *testing.T, from, addr, send string) net.Conn {
	t.Helper()
	conn, err := localDialer(from).DialContext(context.Background(), "tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if send != "" {
		if _, err := conn.Write([]byte(send)); err != nil {
			t.Fatal(err)
		}
	}
	return conn
}

func localDialer(from string) *net.Dialer {
	d := &net.Dialer{Timeout: 5 * time.Second}
	if from != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(from)}
	}
	return d
}

// getFrom is get with a connection from the local address from.
func getFrom(t *testing.T, from, url string) (int, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Transport: &http.Transport{DialContext: localDialer(from).DialContext, DisableKeepAlives: true}}
	res, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	_, err = io.Copy(io.Discard, res.Body)
	return res.StatusCode, err
}

// servedKeepAlive is a connection from the local address from that was answered a GET and is
// left open, idle; nil if the server refused it.
func servedKeepAlive(t *testing.T, from, addr string) net.Conn {
	t.Helper()
	conn := dialFrom(t, from, addr, "GET /healthz HTTP/1.1\r\nHost: test\r\n\r\n")
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		conn.Close()
		return nil
	}
	defer res.Body.Close()
	if _, err := io.Copy(io.Discard, res.Body); err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("keep-alive GET /healthz: %d %v", res.StatusCode, err)
	}
	return conn
}

// waitClosed reads conn until the server closes it (at most 5s, or the test fails) and
// returns when that was; what the server sent is written to answer, if not nil.
func waitClosed(t *testing.T, name string, conn net.Conn, answer io.Writer) time.Time {
	t.Helper()
	if answer == nil {
		answer = io.Discard
	}
	start := time.Now()
	if err := conn.SetReadDeadline(start.Add(5 * time.Second)); err != nil {
		t.Fatal(err)
	}
	_, err := io.Copy(answer, conn)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("%s: still open after 5s", name)
	}
	return time.Now()
}

// closedWithin reports whether the server closes conn within d.
func closedWithin(conn net.Conn, d time.Duration) bool {
	_ = conn.SetReadDeadline(time.Now().Add(d))
	_, err := conn.Read(make([]byte, 1))
	return err != nil && !errors.Is(err, os.ErrDeadlineExceeded)
}
