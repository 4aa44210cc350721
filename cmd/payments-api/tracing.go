package main

import (
	"context"
	"log/slog"
	"time"
)

// flushTimeout bounds the export of the last spans on exit: a collector that has gone away
// must not hold the process.
const flushTimeout = 5 * time.Second

// flushTraces exports the spans still batched and stops the tracer provider (see
// telemetry.Setup). A failure is logged, not returned: the server's work is done by then.
func flushTraces(shutdown func(context.Context) error, logger *slog.Logger) {
	flushCtx, cancel := context.WithTimeout(context.Background(), flushTimeout)
	defer cancel()
	if err := shutdown(flushCtx); err != nil {
		logger.Warn("traces not all exported on exit", "error", err)
	}
}
