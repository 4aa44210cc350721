package handlers_test

import (
	"bytes"
	"cmp"
	"context"
	"log/slog"
	"net"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/labstack/echo/v4"
	"github.com/payments-api/payments-api/internal/app"
	"github.com/payments-api/payments-api/internal/processor"
	"github.com/payments-api/payments-api/internal/ratelimit"
	"github.com/payments-api/payments-api/internal/testing/apitest"
	"github.com/payments-api/payments-api/internal/testing/apptest"
	"github.com/payments-api/payments-api/internal/testing/dbtest"
)

const (
	testKey  = "sk_test_handlers_one"
	otherKey = "sk_test_handlers_two"
)

// testBundle is one real server, built by internal/app as the process builds it, behind an
// httptest server.
type testBundle struct {
	client *apitest.Client // authenticates with testKey
	other  *apitest.Client // authenticates with otherKey: another account
	pool   *pgxpool.Pool
	dbURL  string
	proc   processor.Processor
	echo   *echo.Echo
	logs   *syncBuffer // the server's log, unless withLogger sent it elsewhere
}

// testSetup is what setup builds: the application's configuration and what tests replace.
type testSetup struct {
	cfg    app.Config
	proc   processor.Processor
	limits *ratelimit.Limits
	logger *slog.Logger
	cutOff bool // the database stops answering once the server is built
	// writeTimeout is the test server's WriteTimeout, as WRITE_TIMEOUT sets the process's;
	// zero: none.
	writeTimeout time.Duration
	// draining ends when the server starts shutting down (app.New's context); nil: never.
	draining context.Context
}

// setupOption changes one thing of the server setup builds.
type setupOption func(*testSetup)

// withWriteTimeout gives the test server a WriteTimeout, as WRITE_TIMEOUT does the process,
// and connections with a small send buffer: on loopback the kernel would otherwise take
// megabytes of an answer at once, and a write would not wait for a slow client to read.
func withWriteTimeout(d time.Duration) setupOption {
	return func(s *testSetup) { s.writeTimeout = d }
}

// smallSendBuffers is a listener whose connections hold at most 64 KiB unsent.
type smallSendBuffers struct{ net.Listener }

func (l smallSendBuffers) Accept() (net.Conn, error) {
	conn, err := l.Listener.Accept()
	if tcp, ok := conn.(*net.TCPConn); ok {
		err = tcp.SetWriteBuffer(64 << 10)
	}
	return conn, err
}

// withDraining builds the server with draining as its shutdown signal: the server is
// shutting down once draining ends.
func withDraining(draining context.Context) setupOption {
	return func(s *testSetup) { s.draining = draining }
}

// withProcessor charges cards with p.
func withProcessor(p processor.Processor) setupOption {
	return func(s *testSetup) { s.proc = p }
}

// withLimits enforces l instead of generousLimits.
func withLimits(l *ratelimit.Limits) setupOption {
	return func(s *testSetup) { s.limits = l }
}

// withConfig changes the configuration, as environment variables would.
func withConfig(change func(*app.Config)) setupOption {
	return func(s *testSetup) { change(&s.cfg) }
}

// withLogger writes the server's log to l.
func withLogger(l *slog.Logger) setupOption {
	return func(s *testSetup) { s.logger = l }
}

// withDatabase serves url instead of a fresh database: a second process on the same one.
func withDatabase(url string) setupOption {
	return withConfig(func(c *app.Config) { c.DatabaseURL = url })
}

// withUnreachableDatabase makes the database stop answering once the server is built (it
// migrates and seeds first): nothing listens at its address any more.
func withUnreachableDatabase() setupOption {
	return func(s *testSetup) { s.cutOff = true }
}

// setup builds the application through internal/app, as the process does, on a fresh
// database with the accounts of testKey and otherKey, and serves it until the test ends. By
// default the server is a sandbox with generousLimits whose jobs only queue (tests that need
// them run startWorkers or setupDelivery).
func setup(t testing.TB, opts ...setupOption) *testBundle {
	t.Helper()
	logs := &syncBuffer{}
	s := testSetup{cfg: apptest.Config("", testKey, otherKey), proc: processor.Simulated{}, limits: generousLimits(), logger: slog.New(slog.NewJSONHandler(logs, nil))}
	for _, opt := range opts {
		opt(&s)
	}
	if s.cfg.DatabaseURL == "" {
		s.cfg.DatabaseURL = dbtest.NewURL(t)
	}
	dbURL := s.cfg.DatabaseURL
	var cut func()
	if s.cutOff {
		s.cfg.DatabaseURL, cut = relay(t, dbURL)
	}
	a, err := app.New(cmp.Or(s.draining, context.Background()), s.cfg, s.logger, apptest.Fixed(s.limits), app.WithProcessor(s.proc))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	if s.cfg.Work {
		startJobs(t, a)
	}
	if cut != nil {
		cut()
		a.Pool.Reset() // no connection survives
	}
	srv := httptest.NewUnstartedServer(a.Handler)
	if s.writeTimeout > 0 {
		srv.Config.WriteTimeout = s.writeTimeout
		srv.Listener = smallSendBuffers{srv.Listener}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	client := apitest.NewClient(t, srv.URL, testKey)
	return &testBundle{client: client, other: client.WithKey(otherKey), pool: a.Pool, dbURL: dbURL, proc: s.proc, echo: a.Handler, logs: logs}
}

// startJobs runs a's workers until the test ends.
func startJobs(t testing.TB, a *app.App) {
	t.Helper()
	if err := a.StartJobs(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if err := a.StopJobs(ctx); err != nil {
			t.Errorf("stop job workers: %v", err)
		}
	})
}

// secondInstance starts another server on the same database with a pool of its own: what
// a second process behind the load balancer would be.
func (b *testBundle) secondInstance(t *testing.T) *testBundle {
	t.Helper()
	return setup(t, withDatabase(b.dbURL), withProcessor(b.proc))
}

// count runs a SELECT count(*) ... and returns the number.
func (b *testBundle) count(t *testing.T, query string, args ...any) int {
	t.Helper()
	var n int
	if err := b.pool.QueryRow(context.Background(), query, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

// generousLimits are on in every test server, so every response carries the rate-limit
// headers and is checked against the spec with them, but no quota is ever reached by the
// parallel requests tests make. Rate-limit tests ask for tight limits (withLimits).
func generousLimits() *ratelimit.Limits {
	return apptest.Limits(ratelimit.Rate{Quota: 1_000_000, Window: time.Second})
}

// syncBuffer collects log output written by the server's goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
