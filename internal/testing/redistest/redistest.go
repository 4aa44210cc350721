// Package redistest starts a private redis-server for one test, on a free loopback port, so
// a test can stop and restart it (a Redis outage) without disturbing any other test. The
// redis-server binary must be on PATH (.ci/run installs it). It imports only the Redis client.
package redistest

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Server is a redis-server process that lives until Stop or the end of the test.
type Server struct {
	t    testing.TB
	port int
	cmd  *exec.Cmd
}

// Start runs a fresh, empty redis-server that persists nothing, stopped when t ends.
func Start(t testing.TB) *Server {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Fatalf("redis-server is not installed: %v", err)
	}
	s := &Server{t: t, port: freePort(t)}
	s.Restart()
	t.Cleanup(s.Stop)
	return s
}

// URL is the server's address for REDIS_URL.
func (s *Server) URL() string { return fmt.Sprintf("redis://127.0.0.1:%d/0", s.port) }

// Stop kills the server at once, as a crash would. It does nothing if it is stopped.
func (s *Server) Stop() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
	s.cmd = nil
}

// Restart starts the server again on the same port, empty, and waits until it answers.
func (s *Server) Restart() {
	s.t.Helper()
	s.Stop()
	// The test's context kills the server when the test ends, even if Stop is never reached.
	s.cmd = exec.CommandContext(s.t.Context(), "redis-server", "--port", strconv.Itoa(s.port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--loglevel", "warning")
	if err := s.cmd.Start(); err != nil {
		s.t.Fatalf("start redis-server: %v", err)
	}
	opts, _ := redis.ParseURL(s.URL())
	client := redis.NewClient(opts)
	defer func() { _ = client.Close() }()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for client.Ping(ctx).Err() != nil {
		select {
		case <-ctx.Done():
			s.t.Fatalf("redis-server on port %d did not answer within 10s", s.port)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// freePort asks the kernel for a port no one listens on. Another process could take it
// before redis-server binds it; on a test machine that is rare enough to accept.
func freePort(t testing.TB) int {
	t.Helper()
	ln, err := new(net.ListenConfig).Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ln.Close() }()
	return ln.Addr().(*net.TCPAddr).Port
}
