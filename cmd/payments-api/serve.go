package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/payments-api/payments-api/internal/accounts"
	"github.com/payments-api/payments-api/internal/db"
	"github.com/payments-api/payments-api/internal/events"
	"github.com/payments-api/payments-api/internal/handlers"
	"github.com/payments-api/payments-api/internal/idempotency"
	"github.com/payments-api/payments-api/internal/jobs"
	"github.com/payments-api/payments-api/internal/metrics"
	"github.com/payments-api/payments-api/internal/payments"
	"github.com/payments-api/payments-api/internal/processor"
	"github.com/payments-api/payments-api/internal/telemetry"
	"github.com/payments-api/payments-api/internal/webhooks"
	"go.opentelemetry.io/otel/trace"
)

// serve migrates, seeds the demo keys, starts the job workers (unless PROCESS_ROLE=api) and
// serves on ln (nil when PROCESS_ROLE=worker) until ctx is canceled (SIGINT/SIGTERM). Then
// it drains, within SHUTDOWN_TIMEOUT: the listener closes, bodies still arriving are cut
// short and in-flight requests finish, while the workers stop fetching and finish the jobs
// they run; only then is the pool closed.
func serve(ctx context.Context, cfg config, logger *slog.Logger, ln net.Listener) error {
	tracing, stopTracing, err := telemetry.Setup(ctx, cfg.Telemetry)
	if err != nil {
		return err
	}
	defer flushTraces(ctx, stopTracing, logger) // last: the spans of the drain itself too
	pool, direct, err := openPools(ctx, cfg, logger, tracing)
	if err != nil {
		return err
	}
	defer pool.Close()
	if direct != nil {
		defer direct.Close()
	}

	m, err := db.NewMigrator(cfg.directDatabaseURL())
	if err != nil {
		return err
	}
	if err := errors.Join(m.Up(), m.Close()); err != nil {
		return err
	}
	if err := accounts.SeedDemoKeys(ctx, db.New(pool), cfg.DemoAPIKeys); err != nil {
		return err
	}

	metricsReg := metrics.New(pool)
	metricsReg.CountJobsOnScrape(jobs.WaitingByQueue(pool))
	limits, closeLimits, err := rateLimits(cfg, logger, metricsReg)
	if err != nil {
		return err
	}
	defer closeLimits()
	apiKeys, err := accounts.NewAuthenticator(db.New(pool), cfg.APIKeyCacheSize, cfg.APIKeyCacheTTL)
	if err != nil {
		return err
	}
	if !cfg.sandbox() {
		apiKeys = apiKeys.OnlyKeys(cfg.DemoAPIKeys)
	}
	keys := idempotency.NewStore(pool, cfg.IdempotencyTTL).WithObserver(metricsReg)
	bg, err := newBackground(pool, direct, cfg, logger, keys, metricsReg, tracing)
	if err != nil {
		return err
	}
	e, err := handlers.New(handlers.Options{
		Pool:               pool,
		Logger:             logger,
		Payments:           payments.NewService(pool, processor.Simulated{Latency: cfg.ProcessorLatency}, bg.outbox),
		Idempotency:        keys,
		Events:             events.NewService(pool),
		Webhooks:           webhooks.NewService(pool, webhooks.URLPolicy{AllowPrivateNetworks: cfg.WebhookAllowPrivateNetworks}, bg.deliveries),
		CORSAllowedOrigins: cfg.CORSOrigins,
		RequestTimeout:     cfg.RequestTimeout,
		Draining:           ctx,
		RateLimits:         limits,
		APIKeys:            apiKeys,
		Metrics:            metricsReg,
		Reports:            bg.reports,
		Sandbox:            cfg.sandbox(),
		FaultInjection:     cfg.FaultInjection,
		OpenTestAccounts:   cfg.OpenTestAccounts,
		TrustedProxies:     cfg.trustedProxies(),
		TracerProvider:     tracing,
	})
	if err != nil {
		return err
	}
	if cfg.PprofAddr != "" {
		stopPprof, err := servePprof(ctx, cfg.PprofAddr, logger)
		if err != nil {
			return err
		}
		defer stopPprof()
	}
	if cfg.MetricsAddr != "" {
		stopMetrics, err := serveMetrics(ctx, cfg.MetricsAddr, metricsReg, logger)
		if err != nil {
			return err
		}
		defer stopMetrics()
	}
	srv := newHTTPServer(cfg, e, logger)

	if cfg.works() {
		// Not ctx: the workers must outlive SIGTERM long enough to finish their jobs.
		if err := bg.runner.Start(context.WithoutCancel(ctx)); err != nil {
			return fmt.Errorf("start job workers: %w", err)
		}
	}
	serveErr := make(chan error, 1)
	if ln != nil {
		go func() {
			serveErr <- srv.Serve(limitConnections(ln, cfg.MaxConnections, cfg.MaxConnectionsPerIP, logger))
		}()
		logger.Info("serving", "addr", ln.Addr().String(), "mode", cfg.RunMode, "demo_keys", len(cfg.DemoAPIKeys), "role", cfg.ProcessRole)
		warnOfOpenDoors(cfg, ln.Addr(), logger)
		if slow := cfg.ProcessorLatency + processor.SlowCardDelay; slow >= cfg.RequestTimeout {
			// Not refused: a tight REQUEST_TIMEOUT is a fair choice, and only this card suffers.
			logger.Warn("pm_card_slow will not fit in REQUEST_TIMEOUT: its charges will answer 503",
				"charge_takes", slow, "request_timeout", cfg.RequestTimeout)
		}
	} else {
		logger.Info("running jobs only", "workers", cfg.JobWorkers)
	}

	select {
	case err = <-serveErr:
		err = fmt.Errorf("serve on %s: %w", ln.Addr(), err)
	case <-ctx.Done():
		err = nil
	}
	logger.Info("shutting down: draining in-flight requests and jobs", "timeout", cfg.ShutdownTimeout)
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.ShutdownTimeout)
	defer cancel()
	var wg sync.WaitGroup
	var httpErr, jobsErr error
	if ln != nil {
		wg.Go(func() { httpErr = srv.Shutdown(shutdownCtx) })
	}
	if cfg.works() {
		wg.Go(func() { jobsErr = stopJobs(shutdownCtx, bg.runner, logger) })
	}
	wg.Wait()
	if err := errors.Join(err, httpErr, jobsErr); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	logger.Info("stopped")
	return nil
}

// newHTTPServer bounds what a connection may cost. Only the timeouts set here exist: without
// them a slow or idle client holds its connection, and a file descriptor, forever.
func newHTTPServer(cfg config, handler http.Handler, logger *slog.Logger) *http.Server {
	return &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: cfg.ReadHeaderTimeout, // a client that trickles its headers
		ReadTimeout:       cfg.ReadTimeout,       // ... or its body (the work after it has REQUEST_TIMEOUT)
		WriteTimeout:      cfg.WriteTimeout,      // a client that reads its answer slowly; above REQUEST_TIMEOUT
		IdleTimeout:       cfg.IdleTimeout,       // a keep-alive connection nobody uses
		MaxHeaderBytes:    cfg.MaxHeaderBytes,    // 431 beyond
		// net/http's own complaints (accept errors, panics it recovered) as JSON lines too.
		ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelError),
	}
}

// openPools opens the pool that requests and jobs share and, when DATABASE_URL goes through
// a transaction pooler, a small pool of direct connections for River's LISTEN (nil
// otherwise). The direct one opens first: it is the one that may create the database.
func openPools(ctx context.Context, cfg config, logger *slog.Logger, tracing trace.TracerProvider) (pool, direct *pgxpool.Pool, err error) {
	opts := db.Options{StatementTimeout: cfg.RequestTimeout, TracerProvider: tracing}
	if !cfg.pooled() {
		pool, err = openDatabase(ctx, cfg, cfg.DatabaseURL, opts, logger)
		return pool, nil, err
	}
	opts.MaxConns = 2 // River's listener holds one
	if direct, err = openDatabase(ctx, cfg, cfg.DatabaseDirectURL, opts, logger); err != nil {
		return nil, nil, err
	}
	// No statement_timeout or plan_cache_mode here: PgBouncer refuses them as startup
	// parameters, and a SET would stay with whichever server connection ran it. The pooler
	// sets them on each server connection it opens (connect_query in
	// deploy/cluster/pgbouncer.ini).
	if pool, err = openDatabase(ctx, cfg, cfg.DatabaseURL, db.Options{Pooled: true, TracerProvider: tracing}, logger); err != nil {
		direct.Close()
		return nil, nil, err
	}
	return pool, direct, nil
}

// openDatabase opens a pool on url, retrying for up to DATABASE_CONNECT_TIMEOUT while the
// database cannot be reached: under docker compose or an orchestrator the server may start
// before PostgreSQL accepts connections. An error waiting cannot fix (bad credentials, a bad
// URL) ends it at once.
func openDatabase(ctx context.Context, cfg config, url string, opts db.Options, logger *slog.Logger) (*pgxpool.Pool, error) {
	attempts, cancel := context.WithTimeout(ctx, cfg.DatabaseConnectTimeout)
	defer cancel()
	for wait := 100 * time.Millisecond; ; wait = min(2*wait, 5*time.Second) {
		pool, err := db.Open(attempts, url, opts)
		if err == nil || !db.IsUnavailable(err) {
			return pool, err
		}
		logger.Warn("database unreachable, retrying", "error", err, "retry_in", wait)
		select {
		case <-attempts.Done():
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, fmt.Errorf("database unreachable for DATABASE_CONNECT_TIMEOUT (%s): %w", cfg.DatabaseConnectTimeout, err)
		case <-time.After(wait):
		}
	}
}

// warnOfOpenDoors says, at start-up, what a configuration exposes that its operator may not
// mean to: the sandbox reachable from other machines, or the published key in production.
func warnOfOpenDoors(cfg config, addr net.Addr, logger *slog.Logger) {
	if cfg.sandbox() {
		if tcp, ok := addr.(*net.TCPAddr); ok && !tcp.IP.IsLoopback() {
			logger.Warn("RUN_MODE=sandbox is listening beyond loopback: anyone who can reach it may use the demo keys, create test accounts and inject faults; set RUN_MODE=production to shut those doors",
				"addr", addr.String())
		}
		return
	}
	if slices.Contains(cfg.DemoAPIKeys, publishedDemoKey) {
		logger.Warn("DEMO_API_KEYS names the published demo key in production: anyone who read the README can use it", "key_prefix", publishedDemoKey[:8])
	}
}
