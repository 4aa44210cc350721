package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/payments-api/payments-api/internal/metrics"
)

// Listeners aside from the API's: what an operator reads (metrics, profiles) is served on an
// address of its own, which can stay on a private network while the API faces the world.

// serveMetrics serves GET /metrics for a Prometheus scraper on METRICS_ADDR. In production
// this is the only place metrics are served: the series name routes and outcomes, which
// tell an outsider how the server is used.
func serveMetrics(ctx context.Context, addr string, idle time.Duration, m *metrics.Metrics, logger *slog.Logger) (stop func(), err error) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, r *http.Request) {
		var body bytes.Buffer
		if err := m.WriteText(r.Context(), &body); err != nil {
			logger.ErrorContext(r.Context(), "metrics scrape failed", "error", err)
			http.Error(w, "metrics are unavailable", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		_, _ = body.WriteTo(w)
	})
	return serveAside(ctx, "METRICS_ADDR", addr, mux, 10*time.Second, idle, logger)
}

// servePprof serves Go's profiler (CPU, heap, goroutines, traces) on PPROF_ADDR, never on
// the API's listener: a profile reveals internals and costs CPU, so it is for an operator on
// a private address (PPROF_ADDR=127.0.0.1:6060), off unless asked for.
func servePprof(ctx context.Context, addr string, idle time.Duration, logger *slog.Logger) (stop func(), err error) {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index) // also serves heap, goroutine, allocs, block, mutex
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	// No WriteTimeout: a CPU profile or a trace streams for as long as its ?seconds= asks.
	return serveAside(ctx, "PPROF_ADDR", addr, mux, 0, idle, logger)
}

// serveAside serves handler on addr (set by the variable named) until the returned function
// stops it. A keep-alive connection idle for idle (IDLE_TIMEOUT, as on the API's listener) is
// closed: without an IdleTimeout, net/http would wait for its next request for ever.
func serveAside(ctx context.Context, variable, addr string, handler http.Handler, writeTimeout, idle time.Duration, logger *slog.Logger) (stop func(), err error) {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s %s: %w", variable, addr, err)
	}
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second, WriteTimeout: writeTimeout, IdleTimeout: idle}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("listener stopped", "variable", variable, "error", err)
		}
	}()
	logger.Info("serving "+variable, "addr", ln.Addr().String())
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx) // a profile still streaming is cut off; the process is stopping
	}, nil
}

// startAside starts the listeners aside that the configuration asks for; Close stops them.
func (m *Main) startAside(ctx context.Context) error {
	if m.Config.PprofAddr != "" {
		stop, err := servePprof(ctx, m.Config.PprofAddr, m.Config.IdleTimeout, m.Logger)
		if err != nil {
			return err
		}
		m.aside = append(m.aside, stop)
	}
	if m.Config.MetricsAddr != "" {
		stop, err := serveMetrics(ctx, m.Config.MetricsAddr, m.Config.IdleTimeout, m.app.Metrics, m.Logger)
		if err != nil {
			return err
		}
		m.aside = append(m.aside, stop)
	}
	return nil
}
