package integration

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/payments-api/payments-api/internal/testing/dbtest"
)

// serverPackage is what Binary builds.
const serverPackage = "github.com/payments-api/payments-api/cmd/payments-api"

// logFlush is how late the server may write a log line: it buffers its log and writes it
// every 100 ms (cmd/payments-api's bufferedLog), so a line is waited for a little longer.
const logFlush = 500 * time.Millisecond

var binary struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// Main runs the tests of a package that starts servers, then removes the binary Binary
// built. Call it from TestMain.
func Main(m *testing.M) {
	code := m.Run()
	if binary.dir != "" {
		_ = os.RemoveAll(binary.dir)
	}
	os.Exit(code)
}

// Binary builds payments-api once for all the tests of the package that run it, with the
// race detector when they have it, and returns its path.
func Binary(t testing.TB) string {
	t.Helper()
	binary.once.Do(func() {
		binary.dir, binary.err = os.MkdirTemp("", "payments-api-bin")
		if binary.err != nil {
			return
		}
		binary.path = filepath.Join(binary.dir, "payments-api")
		args := []string{"build", "-o", binary.path}
		if raceDetector {
			args = append(args, "-race")
		}
		out, err := exec.CommandContext(context.Background(), "go", append(args, serverPackage)...).CombinedOutput()
		if err != nil {
			binary.err = fmt.Errorf("go build: %w\n%s", err, out)
		}
	})
	if binary.err != nil {
		t.Fatal(binary.err)
	}
	return binary.path
}

// Server is one running payments-api process.
type Server struct {
	Base string // http://host:port, empty for a worker
	Addr string // host:port it listens on

	cmd    *exec.Cmd
	logs   *SyncBuffer   // written by exec's copying goroutines
	exited chan struct{} // closed once the process has exited and err is set
	err    error         // how it exited
}

// Start runs the binary with env as its whole environment (and PATH), on a fresh database
// unless env names DATABASE_URL, on a free loopback port unless it names LISTEN_ADDR. It
// waits until the server is ready: its /readyz answers 200, or, for PROCESS_ROLE=worker, it
// logged that it runs jobs. When t ends the process gets SIGTERM (SIGKILL if it has not
// exited within 30 s); a data race it reported fails t, and a failed t shows its log.
func Start(t testing.TB, env map[string]string) *Server {
	t.Helper()
	env = maps.Clone(env)
	if env == nil {
		env = map[string]string{}
	}
	if env["DATABASE_URL"] == "" {
		env["DATABASE_URL"] = dbtest.NewURL(t)
	}
	if env["LISTEN_ADDR"] == "" {
		env["LISTEN_ADDR"] = "127.0.0.1:" + FreePort(t)
	}
	// Not the test's context: a test stops or kills the process itself, when it chooses to.
	s := &Server{Addr: env["LISTEN_ADDR"], cmd: exec.CommandContext(context.Background(), Binary(t)),
		logs: &SyncBuffer{}, exited: make(chan struct{})}
	s.cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	for k, v := range env {
		s.cmd.Env = append(s.cmd.Env, k+"="+v)
	}
	s.cmd.Stdout, s.cmd.Stderr = s.logs, s.logs
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { s.err = s.cmd.Wait(); close(s.exited) }()
	t.Cleanup(func() {
		_ = s.Stop(30 * time.Second)
		if strings.Contains(s.logs.String(), "WARNING: DATA RACE") {
			t.Error("payments-api reported a data race")
		}
		if t.Failed() {
			t.Logf("log of payments-api (pid %d):\n%s", s.Pid(), s.logs)
		}
	})
	if env["PROCESS_ROLE"] != "worker" {
		s.Base = "http://" + s.Addr
	}
	s.waitReady(t)
	return s
}

// waitReady waits up to 30 s for the server to be ready, failing t at once if it exits.
func (s *Server) waitReady(t testing.TB) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		select {
		case <-s.exited:
			t.Fatalf("payments-api exited before it was ready: %v\n%s", s.err, s.logs)
		default:
		}
		if s.ready() {
			return
		}
	}
	t.Fatalf("payments-api was not ready within 30s:\n%s", s.logs)
}

// ready reports whether the server answers /readyz with 200, or, a worker, runs jobs.
func (s *Server) ready() bool {
	if s.Base == "" {
		return strings.Contains(s.logs.String(), "running jobs only")
	}
	status, err := Get(context.Background(), s.Base+"/readyz")
	return err == nil && status == http.StatusOK
}

// Pid is the process's id.
func (s *Server) Pid() int { return s.cmd.Process.Pid }

// Stop sends SIGTERM, what an orchestrator stopping the server sends, and returns how the
// process exited. A shutdown still running after within is killed, so it fails its test
// ("signal: killed") instead of hanging the package.
func (s *Server) Stop(within time.Duration) error {
	select {
	case <-s.exited:
		return s.err
	default:
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	killer := time.AfterFunc(within, func() { _ = s.cmd.Process.Kill() })
	defer killer.Stop()
	<-s.exited
	return s.err
}

// Kill sends SIGKILL: no shutdown, no cleanup, exactly what a crash is.
func (s *Server) Kill(t testing.TB) {
	t.Helper()
	if err := s.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-s.exited
}

// Logs is everything the process has written so far.
func (s *Server) Logs() string { return s.logs.String() }

// Logged reports whether a line of the log contains every one of parts, waiting a moment
// for a line the server may still hold in its buffer.
func (s *Server) Logged(parts ...string) bool {
	for deadline := time.Now().Add(logFlush); ; time.Sleep(20 * time.Millisecond) {
		for line := range strings.Lines(s.logs.String()) {
			all := true
			for _, p := range parts {
				all = all && strings.Contains(line, p)
			}
			if all {
				return true
			}
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}

// WaitFor waits up to 10 s for cond to hold, failing t if it does not.
func WaitFor(t testing.TB, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatal("condition not met within 10s")
}

// httpClient is what the harness and the tests send requests with: none may hang a package.
var httpClient = &http.Client{Timeout: 10 * time.Second}

// Get answers the status of a GET of url, within a timeout.
func Get(ctx context.Context, url string) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	res, err := httpClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer func() { _ = res.Body.Close() }()
	_, err = io.Copy(io.Discard, res.Body)
	return res.StatusCode, err
}

// FreePort is a TCP port free on 127.0.0.1 a moment ago, for a process that takes a port
// number rather than a listener.
func FreePort(t testing.TB) string {
	t.Helper()
	ln, err := new(net.ListenConfig).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ln.Close() }()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return port
}

// SyncBuffer is a buffer that goroutines may write while a test reads it: what a process or a
// command writes as it runs.
type SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
