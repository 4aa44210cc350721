// Command payments-api serves the API (the default) or manages the schema; `payments-api
// --help` lists the commands. Configuration comes from environment variables (see config.go
// and docs/configuration.md).
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"
)

const usage = `Usage: payments-api [COMMAND]

  (no command)       create and migrate the database, seed DEMO_API_KEYS, serve on LISTEN_ADDR
                     and run jobs (PROCESS_ROLE=api only serves; =worker only runs jobs)
  migrate COMMAND    manage the schema: up | down [N] | version | force V (payments-api migrate --help)
  help, --help, -h   print this text

Configuration comes from environment variables; docs/configuration.md lists them with their defaults.
`

var logLevels = map[string]slog.Level{
	"debug": slog.LevelDebug, "info": slog.LevelInfo, "warn": slog.LevelWarn, "error": slog.LevelError,
}

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "payments-api:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout io.Writer) error {
	cmd, err := parseCommand(args)
	if err != nil {
		return err
	}
	if cmd.help != "" {
		_, err := io.WriteString(stdout, cmd.help)
		return err
	}
	env := environ()
	cfg, err := loadConfig(env)
	if err != nil {
		return fmt.Errorf("configuration: %w", err)
	}
	logOut := bufferedLog(stdout)
	defer func() { _ = logOut.Stop() }() // writes what is buffered
	logger := newLogger(logOut, logLevels[cfg.LogLevel])

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	if cmd.migrate != nil {
		return migrateCommand(ctx, cfg, *cmd.migrate, stdout)
	}
	m := &Main{Config: cfg, Logger: logger}
	defer m.Close()
	if err := m.Listen(ctx); err != nil {
		return err
	}
	setGCPercent(env)
	return m.Run(ctx)
}

// defaultGOGC is the collector's pace for the server when GOGC does not set one: 400,
// where Go's default is 100.
//
// Most of the server's live heap is data it keeps for its whole life (the compiled contract,
// the pools, the caches). At 100 the collector runs each time as much again has been
// allocated, every few hundred requests, and marks all of that again each time: a share of
// every request's CPU that a server holding little does not pay (docs/performance.md). At 400
// it runs a quarter as often, for more memory under load. What that costs grows with what is
// live, so a deployment that holds more, or has less memory to give, sets GOGC or GOMEMLIMIT
// itself.
const defaultGOGC = 400

// setGCPercent applies defaultGOGC unless the environment names a GOGC of its own.
func setGCPercent(env map[string]string) {
	if _, set := env["GOGC"]; !set {
		debug.SetGCPercent(defaultGOGC)
	}
}

// command is what the arguments ask for: to serve (the zero value), a migration, or help.
type command struct {
	help    string // text to print instead of doing anything
	migrate *migration
}

// parseCommand reads the arguments before any configuration is loaded, so --help works
// anywhere and a typo never reaches the database.
func parseCommand(args []string) (command, error) {
	isHelp := func(arg string) bool { return arg == "help" || arg == "--help" || arg == "-h" }
	switch {
	case len(args) == 0:
		return command{}, nil
	case isHelp(args[0]):
		return command{help: usage}, nil
	case args[0] != "migrate":
		return command{}, fmt.Errorf("unknown command %q (see payments-api --help)", args[0])
	case len(args) > 1 && isHelp(args[1]):
		return command{help: migrateUsage}, nil
	}
	m, err := parseMigrate(args[1:])
	if err != nil {
		return command{}, err
	}
	return command{migrate: &m}, nil
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
