// Command payments-load measures a running payments-api server: it runs each scenario
// (fresh creates, replays, reads, conditional reads, lists, refunds, a same-key race, a
// mix) for a fixed time with a fixed number of clients, and beside each one the same work
// sent straight to the database with pgx, in alternating slices so that a busy machine
// slows both alike. It prints throughput, latency percentiles, errors and each scenario's
// ratio to its database baseline, and draws them as an SVG chart.
//
//	go run ./cmd/payments-load -url http://127.0.0.1:8080 -duration 20s -concurrency 8
//
// Two other modes measure the server against the data it holds: -preload N copies N payments
// with their rows into a database, and -scale rows=url,... measures the same operations on
// servers whose databases hold different numbers of them.
//
// -cluster-url measures get and create through HAProxy and PgBouncer too, against the same
// server reached directly at -url (scripts/perf-cluster runs both).
//
// Beside the rates, the tool reports what a request cost: CPU of the server, the minimal
// server and PostgreSQL, and system calls, read from /proc (cost.go). -clients-sweep
// 1,8,64,256 compares the server with the minimal server at each of those counts of clients.
//
// It only talks to loopback addresses: it is for measuring a server on this machine, never
// for loading someone else's. docs/performance.md explains the figures.
//
// Like every tool here (payments-chaos, payments-listen), it takes flags, read by parseFlags
// into a config; -h lists them. The server, payments-api, takes environment variables
// instead, as a deployment sets them.
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

const usage = `Usage: payments-load [flags]

Measures a running payments-api server on this machine, scenario by scenario, beside the same
work sent straight to its database (docs/performance.md).

Flags:
`

// config is the command line.
type config struct {
	URL          string
	APIKey       string
	DatabaseURL  string // empty: no baselines
	Duration     time.Duration
	Slices       int
	Concurrency  int
	RaceSize     int
	Scenarios    []string
	SVG          string
	MaxPerWorker int
	SweepKeys    int           // > 0: compare each scenario alone and while this many expired keys are swept
	MinimalURL   string        // the minimal server (cmd/payments-load/minimal); empty: no floor
	StripeMock   string        // stripe-mock's URL (Stripe's stateless mock of its API); empty: none
	ClusterURL   string        // the server through HAProxy and PgBouncer, on -url's database; empty: none
	Tiers        []tier        // with ClusterURL: the processes whose CPU per request each path is split into (tiers.go)
	Preload      int           // > 0: only copy this many payments (and their rows) into the database
	Scale        []scaleServer // set: measure the scale operations on each of these servers
	ClientsSweep []int         // set: compare with the floor at each of these counts of clients
}

func main() {
	cfg, err := parseFlags(os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		return // -h: the usage is printed
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "payments-load:", err)
		os.Exit(2)
	}
	if err := runUntilSignal(cfg); err != nil {
		fmt.Fprintln(os.Stderr, "payments-load:", err)
		os.Exit(1)
	}
}

// runUntilSignal runs the load; SIGINT or SIGTERM stops it after the requests in flight.
func runUntilSignal(cfg config) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	_, err := run(ctx, cfg, os.Stdout)
	return err
}

// parseFlags reads the command line; -h prints the usage and returns flag.ErrHelp.
func parseFlags(args []string) (config, error) {
	var cfg config
	fs := flag.NewFlagSet("payments-load", flag.ContinueOnError)
	fs.Usage = func() {
		_, _ = fmt.Fprint(fs.Output(), usage)
		fs.PrintDefaults()
	}
	fs.StringVar(&cfg.URL, "url", "http://127.0.0.1:8080", "the server's base URL (loopback only)")
	fs.StringVar(&cfg.APIKey, "key", "sk_test_demo", "API key to authenticate with")
	fs.StringVar(&cfg.DatabaseURL, "database-url", envOr("DATABASE_URL", "postgres://postgres@localhost:5432/payments?sslmode=disable"),
		"the server's database, for the SQL baselines (loopback only); empty to skip them")
	fs.DurationVar(&cfg.Duration, "duration", 10*time.Second, "time per scenario (its baseline runs as long again)")
	fs.IntVar(&cfg.Slices, "slices", 4, "alternating scenario/baseline slices per scenario")
	fs.IntVar(&cfg.Concurrency, "concurrency", 8, "clients sending requests at once")
	fs.IntVar(&cfg.RaceSize, "race-size", 64, "identical requests sent at once in the race scenario")
	scenarioList := fs.String("scenarios", strings.Join(scenarioNames(), ","), "comma-separated scenarios to run")
	fs.StringVar(&cfg.SVG, "svg", "payments-load.svg", "where to write the chart; empty for none")
	fs.IntVar(&cfg.MaxPerWorker, "max-requests", 1_000_000, "most requests one client sends in one slice")
	fs.IntVar(&cfg.SweepKeys, "sweep-keys", 0,
		"instead of the baselines, run each scenario alone and while the sweep deletes this many expired idempotency keys (needs -database-url)")
	fs.StringVar(&cfg.MinimalURL, "minimal-url", "",
		"the minimal server (cmd/payments-load/minimal, loopback only) to measure get and create against in the same slices; empty for none")
	fs.StringVar(&cfg.StripeMock, "stripe-mock-url", "",
		"stripe-mock (loopback only) to measure get and create against, as Stripe's API takes them, in the same slices; empty for none")
	fs.StringVar(&cfg.ClusterURL, "cluster-url", "",
		"the same server through HAProxy and PgBouncer (deploy/cluster/run with API_PROCESSES=1) on -url's database (loopback only), to measure get and create through in the same slices; empty for none")
	tiers := fs.String("tiers", "",
		"with -cluster-url, the processes a request may cross or set to work, as a comma-separated list of name=port (the port each listens on, PostgreSQL's too; name=port+port for a tier of processes on several ports), to split each path's CPU per request by them")
	fs.IntVar(&cfg.Preload, "preload", 0,
		"instead of measuring, copy this many payments with their refunds, events, deliveries and keys into -database-url (9 in 10 in -key's account), without ANALYZE")
	scale := fs.String("scale", "",
		"instead of the scenarios, measure create, get, get-304, patch, refund, list, list-deep and report on each server of a list of rows=url (rows: the payments preloaded into its database)")
	clientsSweep := fs.String("clients-sweep", "",
		"instead of the scenario table, run each scenario (get, create) against the server and -minimal-url with each of a comma-separated list of client counts, e.g. 1,8,64,256")
	if err := fs.Parse(args); err != nil {
		return config{}, err
	}
	if fs.NArg() > 0 {
		return config{}, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	cfg.Scenarios = strings.Split(*scenarioList, ",")
	if *tiers != "" {
		var err error
		if cfg.Tiers, err = parseTiers(*tiers); err != nil {
			return config{}, err
		}
	}
	if *scale != "" {
		var err error
		if cfg.Scale, err = parseScaleServers(*scale); err != nil {
			return config{}, err
		}
	}
	if *clientsSweep != "" {
		if err := cfg.setClientsSweep(*clientsSweep, flagGiven(fs, "scenarios")); err != nil {
			return config{}, err
		}
	}
	return cfg, cfg.validate()
}

func (c config) validate() error {
	var errs []error
	for _, name := range c.Scenarios {
		if !slices.Contains(scenarioNames(), name) {
			errs = append(errs, fmt.Errorf("unknown scenario %q (want some of %s)", name, strings.Join(scenarioNames(), ",")))
		}
	}
	if c.Duration <= 0 || c.Duration > time.Hour {
		errs = append(errs, fmt.Errorf("-duration %s: want more than 0 and at most 1h", c.Duration))
	}
	if c.Slices < 1 || c.Concurrency < 1 || c.RaceSize < 2 || c.MaxPerWorker < 1 {
		errs = append(errs, errors.New("-slices, -concurrency and -max-requests must be at least 1, -race-size at least 2"))
	}
	errs = append(errs, c.validateSweep()...)
	errs = append(errs, c.validateClientsSweep()...)
	if c.Preload < 0 || c.Preload > 10_000_000 || (c.Preload > 0 && c.DatabaseURL == "") {
		errs = append(errs, fmt.Errorf("-preload %d: want at most 10,000,000, and -database-url", c.Preload))
	}
	if len(c.Tiers) > 0 && c.ClusterURL == "" {
		errs = append(errs, errors.New("-tiers: needs -cluster-url"))
	}
	errs = append(errs, validateTarget("-url", c.URL))
	for _, other := range []struct{ flag, url string }{
		{"-minimal-url", c.MinimalURL}, {"-stripe-mock-url", c.StripeMock}, {"-cluster-url", c.ClusterURL},
	} {
		if other.url != "" {
			errs = append(errs, validateTarget(other.flag, other.url))
		}
	}
	for _, s := range c.Scale {
		errs = append(errs, validateTarget("-scale", s.url))
	}
	if c.DatabaseURL != "" {
		if pc, err := pgxpool.ParseConfig(c.DatabaseURL); err != nil {
			errs = append(errs, fmt.Errorf("-database-url: %w", err))
		} else if !strings.HasPrefix(pc.ConnConfig.Host, "/") { // a Unix socket is local
			if err := loopbackOnly(pc.ConnConfig.Host); err != nil {
				errs = append(errs, fmt.Errorf("-database-url: %w", err))
			}
		}
	}
	return errors.Join(errs...)
}

// validateSweep checks -sweep-keys: it needs the database, and a scenario of clients.
func (c config) validateSweep() []error {
	if c.SweepKeys == 0 {
		return nil
	}
	var errs []error
	if c.SweepKeys < 0 || c.SweepKeys > 10_000_000 {
		errs = append(errs, fmt.Errorf("-sweep-keys %d: want at most 10,000,000", c.SweepKeys))
	}
	if c.DatabaseURL == "" {
		errs = append(errs, errors.New("-sweep-keys needs -database-url: the keys are inserted and swept there"))
	}
	if slices.Contains(c.Scenarios, raceScenario) {
		errs = append(errs, errors.New("-sweep-keys runs scenarios of clients: leave out race"))
	}
	return errs
}

// validateTarget checks that a server's URL is http(s) on loopback.
func validateTarget(flagName, target string) error {
	u, err := url.Parse(target)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return fmt.Errorf("%s %q: want an http:// URL", flagName, target)
	}
	if err := loopbackOnly(u.Hostname()); err != nil {
		return fmt.Errorf("%s: %w", flagName, err)
	}
	return nil
}

// loopbackOnly refuses any host but this machine's loopback: a load tool pointed elsewhere
// is an attack.
func loopbackOnly(host string) error {
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("%q is not a loopback address: this tool only measures a server on this machine", host)
}

func envOr(name, fallback string) string {
	if v, ok := os.LookupEnv(name); ok {
		return v
	}
	return fallback
}

// run measures every configured scenario, prints the table to out, writes the chart and
// returns the results.
func run(ctx context.Context, cfg config, out io.Writer) ([]result, error) {
	switch {
	case cfg.Preload > 0:
		return nil, runPreload(ctx, cfg, out)
	case len(cfg.Scale) > 0:
		_, err := runScale(ctx, cfg, out)
		return nil, err
	case len(cfg.ClientsSweep) > 0:
		_, err := runClientsSweep(ctx, cfg, out)
		return nil, err
	}
	c := newClient(cfg.URL, cfg.APIKey, max(cfg.Concurrency, cfg.RaceSize))
	defer c.http.CloseIdleConnections()
	if cfg.SweepKeys > 0 {
		_, err := runSweepComparison(ctx, cfg, c, out)
		return nil, err
	}
	var base *baselines
	if cfg.DatabaseURL != "" {
		pcfg, err := pgxpool.ParseConfig(cfg.DatabaseURL)
		if err != nil {
			return nil, err
		}
		pcfg.MaxConns = int32(cfg.Concurrency) // one connection per client, as the server's clients get
		pool, err := pgxpool.NewWithConfig(ctx, pcfg)
		if err != nil {
			return nil, fmt.Errorf("connect for the baselines: %w", err)
		}
		defer pool.Close()
		if base, err = newBaselines(ctx, pool, cfg.APIKey, c.run); err != nil {
			return nil, err
		}
	}
	fix, err := c.setup(ctx, cfg.Concurrency)
	if err != nil {
		return nil, fmt.Errorf("setup: %w", err)
	}

	o := others{
		floor:      newPeer(cfg.MinimalURL, cfg.APIKey, cfg.Concurrency, fix, floorScenarios),
		cluster:    newPeer(cfg.ClusterURL, cfg.APIKey, cfg.Concurrency, fix, clusterScenarios),
		stripeMock: newStripeMock(cfg.StripeMock, cfg.Concurrency),
	}
	defer o.close()
	meters := newCostMeters(ctx, cfg)
	machineBefore, machineErr := meters.machineTimes()
	var results []result
	for _, name := range cfg.Scenarios {
		if _, err := fmt.Fprintf(out, "running %s...\n", name); err != nil {
			return results, err
		}
		results = append(results, measure(ctx, cfg, c, fix, base, o, meters, name))
		if ctx.Err() != nil {
			return results, ctx.Err()
		}
	}
	if err := report(out, results, meters.tierNames(), serverRSS(ctx, c)); err != nil {
		return results, err
	}
	machineAfter, err := meters.machineTimes()
	if err := reportSteal(out, machineBefore, machineAfter, cmp.Or(machineErr, err)); err != nil {
		return results, err
	}
	if cfg.SVG == "" {
		return results, nil
	}
	if err := writeChart(cfg.SVG, results, cfg); err != nil {
		return results, err
	}
	_, err = fmt.Fprintf(out, "chart: %s\n", cfg.SVG)
	return results, err
}
