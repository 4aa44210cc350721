// Command payments-api serves the API (the default) or manages the schema:
//
//	payments-api                 migrate up, seed the demo keys, serve on LISTEN_ADDR
//	payments-api migrate up      apply pending migrations
//	payments-api migrate down N  revert the last N migrations
//	payments-api migrate version print the applied version
//
// Configuration comes from environment variables (see config.go and README.md).
package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

var logLevels = map[string]slog.Level{
	"debug": slog.LevelDebug, "info": slog.LevelInfo, "warn": slog.LevelWarn, "error": slog.LevelError,
}

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "payments-api:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	cfg, err := loadConfig(environ())
	if err != nil {
		return fmt.Errorf("configuration: %w", err)
	}
	logger := slog.New(slog.NewJSONHandler(os.Stdout, &slog.HandlerOptions{Level: logLevels[cfg.LogLevel]}))

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	if len(args) > 0 && args[0] == "migrate" {
		return migrateCommand(ctx, cfg, args[1:], os.Stdout)
	}
	if len(args) > 0 {
		return fmt.Errorf("unknown command %q (want no command, or migrate up|down N|version)", args[0])
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", cfg.ListenAddr)
	if err != nil {
		return fmt.Errorf("listen on LISTEN_ADDR %s: %w", cfg.ListenAddr, err)
	}
	return serve(ctx, cfg, logger, ln)
}

func environ() map[string]string {
	m := map[string]string{}
	for _, kv := range os.Environ() {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	return m
}
