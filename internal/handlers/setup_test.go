package handlers_test

import (
	"bytes"
	"context"
	"log/slog"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/labstack/echo/v4"
	"github.com/payments-api/payments-api/internal/accounts"
	"github.com/payments-api/payments-api/internal/db"
	"github.com/payments-api/payments-api/internal/events"
	"github.com/payments-api/payments-api/internal/handlers"
	"github.com/payments-api/payments-api/internal/idempotency"
	"github.com/payments-api/payments-api/internal/jobs"
	"github.com/payments-api/payments-api/internal/metrics"
	"github.com/payments-api/payments-api/internal/payments"
	"github.com/payments-api/payments-api/internal/processor"
	"github.com/payments-api/payments-api/internal/ratelimit"
	"github.com/payments-api/payments-api/internal/reports"
	"github.com/payments-api/payments-api/internal/testing/apitest"
	"github.com/payments-api/payments-api/internal/testing/dbtest"
	"github.com/payments-api/payments-api/internal/webhooks"
)

const (
	testKey  = "sk_test_handlers_one"
	otherKey = "sk_test_handlers_two"
)

// testBundle is one real server on its own fresh database.
type testBundle struct {
	client *apitest.Client // authenticates with testKey
	other  *apitest.Client // authenticates with otherKey: another account
	pool   *pgxpool.Pool
	dbURL  string
	proc   processor.Processor
	echo   *echo.Echo
	logs   *syncBuffer
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	return setupWithProcessor(t, processor.Simulated{})
}

func setupWithProcessor(t *testing.T, proc processor.Processor) *testBundle {
	t.Helper()
	pool, url := seededDB(t)
	b := serve(t, pool, proc)
	b.dbURL = url
	return b
}

// seededDB is a fresh database with the accounts of testKey and otherKey.
func seededDB(tb testing.TB) (*pgxpool.Pool, string) {
	tb.Helper()
	pool, url := dbtest.NewPool(tb)
	if err := accounts.SeedDemoKeys(context.Background(), db.New(pool), []string{testKey, otherKey}); err != nil {
		tb.Fatal(err)
	}
	return pool, url
}

// secondInstance starts another server on the same database with a pool of its own: what
// a second process behind the load balancer would be.
func (b *testBundle) secondInstance(t *testing.T) *testBundle {
	t.Helper()
	pool, err := db.Open(context.Background(), b.dbURL, db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return serve(t, pool, b.proc)
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

// serve starts the real echo stack on pool behind an httptest server.
func serve(t *testing.T, pool *pgxpool.Pool, proc processor.Processor) *testBundle {
	t.Helper()
	logs := &syncBuffer{}
	e, srv := startServer(t, pool, proc, slog.New(slog.NewJSONHandler(logs, nil)))
	client := apitest.NewClient(t, srv.URL, testKey)
	return &testBundle{client: client, other: client.WithKey(otherKey), pool: pool, proc: proc, echo: e, logs: logs}
}

// startServer wires the server as main does, on pool and proc, behind an httptest server
// closed when tb ends. Its rate limits are generousLimits.
func startServer(tb testing.TB, pool *pgxpool.Pool, proc processor.Processor, logger *slog.Logger) (*echo.Echo, *httptest.Server) {
	tb.Helper()
	return startServerWithLimits(tb, pool, proc, logger, generousLimits())
}

// generousLimits are on in every test server, so every response carries the rate-limit
// headers and is checked against the spec with them, but no quota is ever reached by the
// parallel requests tests make. Rate-limit tests ask for tight limits (setupWithLimits).
func generousLimits() *handlers.RateLimits {
	huge := ratelimit.Rate{Quota: 1_000_000, Window: time.Second}
	return &handlers.RateLimits{
		Limiter:         ratelimit.NewMemory(),
		Default:         ratelimit.Policy{Name: "default", Rate: huge},
		Writes:          ratelimit.Policy{Name: "writes", Rate: huge},
		Unauthenticated: ratelimit.Policy{Name: "unauthenticated", Rate: huge},
		TestAccounts:    ratelimit.Policy{Name: "test_accounts", Rate: huge},
	}
}

func startServerWithLimits(tb testing.TB, pool *pgxpool.Pool, proc processor.Processor, logger *slog.Logger, limits *handlers.RateLimits) (*echo.Echo, *httptest.Server) {
	tb.Helper()
	opts := testOptions(tb, pool, proc, logger)
	opts.RateLimits = limits
	return serveOptions(tb, opts)
}

// serveOptions serves the server opts builds until the test ends.
func serveOptions(tb testing.TB, opts handlers.Options) (*echo.Echo, *httptest.Server) {
	tb.Helper()
	e, err := handlers.New(opts)
	if err != nil {
		tb.Fatal(err)
	}
	srv := httptest.NewServer(e)
	tb.Cleanup(srv.Close)
	return e, srv
}

// testOptions wires the server's parts as main does, on pool and proc, with generousLimits.
func testOptions(tb testing.TB, pool *pgxpool.Pool, proc processor.Processor, logger *slog.Logger) handlers.Options {
	tb.Helper()
	m := metrics.New(pool)
	m.CountJobsOnScrape(jobs.WaitingByQueue(pool)) // as serve wires it
	apiKeys, err := accounts.NewAuthenticator(db.New(pool), accounts.DefaultCacheSize, accounts.DefaultCacheTTL)
	if err != nil {
		tb.Fatal(err)
	}
	queue := insertOnlyQueue(tb, pool)
	deliveries := webhooks.NewJobQueue(queue)
	return handlers.Options{
		Pool:        pool,
		Logger:      logger,
		Payments:    payments.NewService(pool, proc, events.NewOutbox(deliveries)),
		Events:      events.NewService(pool),
		Webhooks:    webhooks.NewService(pool, webhooks.URLPolicy{}, deliveries),
		Idempotency: idempotency.NewStore(pool, idempotency.DefaultTTL).WithObserver(m),
		APIKeys:     apiKeys,
		Metrics:     m,
		RateLimits:  generousLimits(),
		Reports:     reports.NewService(pool, queue, reports.DefaultRetention),
		// On, as the server's configuration has them by default (RUN_MODE=sandbox).
		Sandbox:          true,
		FaultInjection:   true,
		OpenTestAccounts: true,
	}
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
