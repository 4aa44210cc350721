package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"

	"github.com/payments-api/payments-api/internal/processor"
)

// serveAPI serves the API on Listener, if there is one, and answers why serving ended.
func (m *Main) serveAPI() <-chan error {
	cfg, ln, logger := m.Config, m.Listener, m.Logger
	served := make(chan error, 1)
	if ln == nil {
		logger.Info("running jobs only", "workers", cfg.JobWorkers)
		return served
	}
	// The start-up lines come before the first request is answered, so whoever sees the
	// server answer can already read them.
	logger.Info("serving", "addr", ln.Addr().String(), "mode", cfg.RunMode, "demo_keys", len(cfg.DemoAPIKeys), "role", cfg.ProcessRole)
	warnOfOpenDoors(cfg, ln.Addr(), logger)
	if slow := cfg.ProcessorLatency + processor.SlowCardDelay; slow >= cfg.RequestTimeout {
		// Not refused: a tight REQUEST_TIMEOUT is a fair choice, and only this card suffers.
		logger.Warn("pm_card_slow will not fit in REQUEST_TIMEOUT: its charges will answer 503",
			"charge_takes", slow, "request_timeout", cfg.RequestTimeout)
	}
	m.http = newHTTPServer(cfg, m.app.Handler, logger)
	// Every request's context descends from this one, so drain can stop them all.
	requests, stop := context.WithCancelCause(context.Background())
	m.http.BaseContext, m.stopRequests = func(net.Listener) context.Context { return requests }, stop
	go func() {
		err := m.http.Serve(limitConnections(ln, cfg.MaxConnections, cfg.MaxConnectionsPerIP, logger))
		served <- fmt.Errorf("serve on %s: %w", ln.Addr(), err)
	}()
	return served
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

// warnOfOpenDoors says, at start-up, what a configuration exposes that its operator may not
// mean to: the sandbox reachable from other machines. (Production refuses to start with a
// door open: applyModeDefaults.)
func warnOfOpenDoors(cfg config, addr net.Addr, logger *slog.Logger) {
	if !cfg.sandbox() {
		return
	}
	if tcp, ok := addr.(*net.TCPAddr); ok && !tcp.IP.IsLoopback() {
		logger.Warn("RUN_MODE=sandbox is listening beyond loopback: anyone who can reach it may use the demo keys, create test accounts and inject faults; set RUN_MODE=production to shut those doors",
			"addr", addr.String())
	}
}
