package main

import (
	"context"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/payments-api/payments-api/internal/testing/dbtest"
	"github.com/payments-api/payments-api/internal/testing/integration"
)

const testKey = "sk_test_serve_harness"

// httpClient is what the tests here send requests with: none of them may hang the package.
var httpClient = &http.Client{Timeout: 10 * time.Second}

// running is the real server process (Main), as main runs it, on a local port.
type running struct {
	base string // http://127.0.0.1:port
	addr string
	logs *integration.SyncBuffer
	stop context.CancelFunc // what SIGTERM does
	done chan error         // Run's result, once Close has released everything
}

// startServe runs Main with the configuration in env (on a fresh database unless env names
// one, with testKey unless env sets DEMO_API_KEYS) and, unless wait is false, waits until it
// is ready. It is stopped when t ends.
func startServe(t *testing.T, env map[string]string, wait bool) *running {
	t.Helper()
	env = maps.Clone(env)
	if env["DATABASE_URL"] == "" {
		env["DATABASE_URL"] = dbtest.NewURL(t)
	}
	if _, set := env["DEMO_API_KEYS"]; !set {
		env["DEMO_API_KEYS"] = testKey
	}
	cfg, err := loadConfig(env)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := new(net.ListenConfig).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	r := &running{base: "http://" + ln.Addr().String(), addr: ln.Addr().String(), logs: &integration.SyncBuffer{}, stop: stop, done: make(chan error, 1)}
	m := &Main{Config: cfg, Logger: newLogger(r.logs, slog.LevelDebug), Listener: ln}
	go func() {
		err := m.Run(ctx)
		m.Close()
		r.done <- err
	}()
	t.Cleanup(func() {
		stop()
		select {
		case err := <-r.done:
			if err != nil {
				t.Logf("serve: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("serve did not return within 30s of being stopped")
		}
	})
	if wait {
		integration.WaitFor(t, func() bool { return r.status("/readyz") == http.StatusOK })
	}
	return r
}

// wait is Run's result once it returns, after stop. A shutdown that hangs fails t after
// 30 s instead of hanging the package.
func (r *running) wait(t *testing.T) error {
	t.Helper()
	select {
	case err := <-r.done:
		r.done <- err // for the cleanup
		return err
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not return within 30s of being stopped")
		return nil
	}
}

// status is the status of a GET, or 0 when there is no answer.
func (r *running) status(path string) int {
	status, err := integration.Get(context.Background(), r.base+path)
	if err != nil {
		return 0
	}
	return status
}

// logged reports whether a log line contains every one of parts.
func (r *running) logged(parts ...string) bool {
	for _, line := range strings.Split(r.logs.String(), "\n") {
		all := line != ""
		for _, p := range parts {
			all = all && strings.Contains(line, p)
		}
		if all {
			return true
		}
	}
	return false
}
