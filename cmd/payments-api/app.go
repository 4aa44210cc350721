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

	"github.com/payments-api/payments-api/internal/app"
	"github.com/payments-api/payments-api/internal/handlers"
	"github.com/payments-api/payments-api/internal/metrics"
	"github.com/payments-api/payments-api/internal/ratelimit"
	"github.com/payments-api/payments-api/internal/telemetry"
)

// Main is the server process: its configuration and, once Run has built them, its parts.
type Main struct {
	Config config
	Logger *slog.Logger
	// Listener is the API's (see Listen); nil in a process that only runs jobs.
	Listener net.Listener

	app  *app.App
	http *http.Server
	// stopRequests cancels the context of every request still running (see stopServing).
	stopRequests context.CancelCauseFunc
	aside        []func()                    // stops the metrics and profiling listeners
	stopTracing  func(context.Context) error // exports the last spans; nil without tracing
}

// Listen opens LISTEN_ADDR, unless the process only runs jobs.
func (m *Main) Listen(ctx context.Context) error {
	if !m.Config.serves() {
		return nil
	}
	ln, err := new(net.ListenConfig).Listen(ctx, "tcp", m.Config.ListenAddr)
	if err != nil {
		return fmt.Errorf("listen on LISTEN_ADDR %s: %w", m.Config.ListenAddr, err)
	}
	m.Listener = ln
	return nil
}

// Run builds the application, starts the job workers (unless PROCESS_ROLE=api) and serves on
// Listener until ctx is canceled (SIGINT/SIGTERM). Then it drains, within SHUTDOWN_TIMEOUT:
// the listener closes, bodies still arriving are cut short and in-flight requests finish,
// while the workers stop fetching and finish the jobs they run. Close, after it, closes the
// pool.
func (m *Main) Run(ctx context.Context) (err error) {
	limits := func(reg *metrics.Metrics) (*ratelimit.Limits, func(), error) {
		return rateLimits(m.Config, m.Logger, reg)
	}
	cfg := m.Config.appConfig()
	if cfg.Tracing, m.stopTracing, err = telemetry.Setup(ctx, m.Config.Telemetry); err != nil {
		return err
	}
	if m.app, err = app.New(ctx, cfg, m.Logger, limits); err != nil {
		return err
	}
	if err := m.startAside(ctx); err != nil {
		return err
	}
	if m.Config.works() {
		// Not ctx: the workers must outlive SIGTERM long enough to finish their jobs.
		if err := m.app.StartJobs(context.WithoutCancel(ctx)); err != nil {
			return err
		}
	}
	served := m.serveAPI()
	select {
	case err := <-served:
		return m.drain(ctx, err)
	case <-ctx.Done():
		return m.drain(ctx, nil)
	}
}

// Close releases what Run built, in reverse: the listeners aside, then the application,
// whose pool closes last, and then the tracer, so the spans of the drain are exported too.
// The application has closeGrace to close: pgx waits up to 15 s for a server's answer to
// each connection's goodbye, which a database that froze never sends, and the process's
// exit closes the sockets anyway.
func (m *Main) Close() {
	for _, stop := range slices.Backward(m.aside) {
		stop()
	}
	if m.app != nil {
		closed := make(chan struct{})
		go func() {
			defer close(closed)
			m.app.Close()
		}()
		select {
		case <-closed:
		case <-time.After(closeGrace):
			m.Logger.Warn("the database did not answer the pool's goodbye in time; leaving its connections to the exit", "waited", closeGrace)
		}
	}
	if m.stopTracing != nil {
		flushTraces(m.stopTracing, m.Logger)
	}
}

// closeGrace is how long the application has to close once everything has stopped: a
// healthy database says goodbye in milliseconds.
const closeGrace = time.Second

// drain shuts the API's listener and waits for in-flight requests, while the workers stop
// fetching and finish theirs, all within SHUTDOWN_TIMEOUT. serveErr is why serving ended,
// if it did by itself.
func (m *Main) drain(ctx context.Context, serveErr error) error {
	m.Logger.Info("shutting down: draining in-flight requests and jobs", "timeout", m.Config.ShutdownTimeout)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), m.Config.ShutdownTimeout)
	defer cancel()
	var wg sync.WaitGroup
	var httpErr, jobsErr error
	if m.http != nil {
		wg.Go(func() { httpErr = m.stopServing(ctx) })
	}
	if m.Config.works() {
		wg.Go(func() { jobsErr = m.app.StopJobs(ctx) })
	}
	wg.Wait()
	if err := errors.Join(serveErr, httpErr, jobsErr); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	m.Logger.Info("stopped")
	return nil
}

// stopServing closes the API's listener and waits for the requests in flight until ctx ends.
// Those still running then are stopped, not waited for: their contexts are cancelled, so
// each answers 503 (a transaction not yet committed rolls back), and the process ends soon
// after SHUTDOWN_TIMEOUT. Closing the pool would otherwise wait for them, up to their
// REQUEST_TIMEOUT.
func (m *Main) stopServing(ctx context.Context) error {
	err := m.http.Shutdown(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		m.Logger.Warn("requests outlasted SHUTDOWN_TIMEOUT; stopping them", "error", err)
		m.stopRequests(handlers.ErrShutdown)
		// A moment for their answers to go out; Shutdown returns once their connections close.
		grace, cancel := context.WithTimeout(context.WithoutCancel(ctx), stoppedRequestsGrace)
		defer cancel()
		_ = m.http.Shutdown(grace)
	}
	return err
}

// stoppedRequestsGrace is how long the requests stopped at the end of SHUTDOWN_TIMEOUT have to
// answer: a cancelled statement or charge returns at once.
const stoppedRequestsGrace = time.Second

// appConfig is the part of the configuration the application is built from.
func (c config) appConfig() app.Config {
	return app.Config{
		DatabaseURL:                 c.DatabaseURL,
		DatabaseDirectURL:           c.DatabaseDirectURL,
		DatabaseConnectTimeout:      c.DatabaseConnectTimeout,
		DatabaseFailoverWait:        c.DatabaseFailoverWait,
		DemoAPIKeys:                 c.DemoAPIKeys,
		Sandbox:                     c.sandbox(),
		FaultInjection:              c.FaultInjection,
		OpenTestAccounts:            c.OpenTestAccounts,
		RequestTimeout:              c.RequestTimeout,
		ProcessorLatency:            c.ProcessorLatency,
		IdempotencyTTL:              c.IdempotencyTTL,
		APIKeyCacheSize:             c.APIKeyCacheSize,
		APIKeyCacheTTL:              c.APIKeyCacheTTL,
		CORSOrigins:                 c.CORSOrigins,
		TrustedProxies:              c.trustedProxies(),
		WebhookAllowPrivateNetworks: c.WebhookAllowPrivateNetworks,
		WebhookRetrySchedule:        c.WebhookRetrySchedule,
		WebhookTimeout:              c.WebhookTimeout,
		WebhookWorkers:              c.WebhookWorkers,
		Work:                        c.works(),
		JobWorkers:                  c.JobWorkers,
		JobTimeout:                  c.JobTimeout,
		JobRescueAfter:              c.JobRescueAfter,
		ReportRetention:             c.ReportRetention,
		EventRetention:              c.EventRetention,
	}
}
