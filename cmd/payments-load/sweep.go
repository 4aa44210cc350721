package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/payments-api/payments-api/internal/accounts"
	"github.com/payments-api/payments-api/internal/db"
	"github.com/payments-api/payments-api/internal/idempotency"
	"github.com/payments-api/payments-api/internal/textout"
)

// The sweep comparison (-sweep-keys N) measures what the periodic sweep costs ordinary
// requests. Each slice runs a scenario twice: alone, for the slice's time; then N expired
// idempotency keys are inserted in one statement (not measured), and the scenario runs again
// for as long as the sweep the server runs (idempotency.Store.Sweep, its batches of 500)
// takes to delete them, from this process against the server's database. The server's own
// periodic sweep may take part, which changes nothing: the same keys go, once.

// sweepResult is one scenario alone and during the sweeps.
type sweepResult struct {
	name          string
	alone, during sample
	swept         int64
	sweepTime     time.Duration
	statements    []time.Duration // each delete of the sweeps, in the order they ran
}

// runSweepComparison measures every configured scenario with and without a sweep and
// prints the table to out.
func runSweepComparison(ctx context.Context, cfg config, c *client, out io.Writer) ([]sweepResult, error) {
	sw, err := newSweeper(ctx, cfg.DatabaseURL, cfg.APIKey, c.run)
	if err != nil {
		return nil, err
	}
	defer sw.pool.Close()
	fix, err := c.setup(ctx, cfg.Concurrency)
	if err != nil {
		return nil, fmt.Errorf("setup: %w", err)
	}
	var results []sweepResult
	for _, name := range cfg.Scenarios {
		if _, err := fmt.Fprintf(out, "running %s, alone and while sweeping %d keys...\n", name, cfg.SweepKeys); err != nil {
			return results, err
		}
		r, err := measureSweep(ctx, cfg, c, fix, sw, name)
		if err != nil {
			return results, err
		}
		results = append(results, r)
	}
	return results, reportSweep(out, results)
}

// measureSweep runs one scenario alone and during a sweep, cfg.Slices times each, in turn.
func measureSweep(ctx context.Context, cfg config, c *client, f *fixtures, sw *sweeper, name string) (sweepResult, error) {
	w := scenarios[slices.IndexFunc(scenarios, func(s scenario) bool { return s.name == name })].workload(c, f)
	slice := cfg.Duration / time.Duration(cfg.Slices)
	res := sweepResult{name: name}
	for i := range cfg.Slices {
		res.alone.merge(runSlice(ctx, cfg.Concurrency, slice, cfg.MaxPerWorker, w))
		if err := sw.insert(ctx, cfg.SweepKeys, fmt.Sprintf("%s-%d-", name, i)); err != nil {
			return res, err
		}
		done := make(chan struct{})
		var swept int64
		var took time.Duration
		var err error
		go func() {
			defer close(done)
			swept, took, err = sw.sweep(ctx)
		}()
		res.during.merge(runUntil(ctx, cfg.Concurrency, done, cfg.MaxPerWorker, w))
		<-done
		if err != nil {
			return res, err
		}
		res.swept, res.sweepTime = res.swept+swept, res.sweepTime+took
	}
	slices.Sort(res.alone.latencies)
	slices.Sort(res.during.latencies)
	res.statements = sw.timer.durations()
	return res, nil
}

// sweeper inserts expired keys and sweeps them, on a pool of its own that times each
// statement.
type sweeper struct {
	pool      *pgxpool.Pool
	store     *idempotency.Store
	timer     *statementTimer
	accountID string
	prefix    string // makes this run's keys unique
}

func newSweeper(ctx context.Context, databaseURL, apiKey, run string) (*sweeper, error) {
	pcfg, err := pgxpool.ParseConfig(databaseURL)
	if err != nil {
		return nil, err
	}
	timer := &statementTimer{}
	pcfg.ConnConfig.Tracer = timer
	pcfg.MaxConns = 2
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return nil, fmt.Errorf("connect for the sweep: %w", err)
	}
	acct, err := accounts.Authenticate(ctx, db.New(pool), apiKey)
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("sweep account: %w", err)
	}
	return &sweeper{
		pool: pool, store: idempotency.NewStore(pool, idempotency.DefaultTTL), timer: timer,
		accountID: acct.ID, prefix: run + "-sweep-",
	}, nil
}

// insert adds n keys of the account that have already expired.
func (s *sweeper) insert(ctx context.Context, n int, prefix string) error {
	_, err := db.New(s.pool).IdempotencyKeyInsertExpired(ctx, db.IdempotencyKeyInsertExpiredParams{
		AccountID: s.accountID, KeyPrefix: s.prefix + prefix, N: int32(n),
	})
	if err != nil {
		return fmt.Errorf("insert %d expired keys: %w", n, err)
	}
	return nil
}

// sweep deletes every expired key as the server's sweep does, timing each statement.
func (s *sweeper) sweep(ctx context.Context) (int64, time.Duration, error) {
	s.timer.record(true)
	defer s.timer.record(false)
	start := time.Now()
	n, err := s.store.Sweep(ctx)
	return n, time.Since(start), err
}

// statementTimer is a pgx tracer that times every statement while recording is on.
type statementTimer struct {
	mu        sync.Mutex
	recording bool
	took      []time.Duration
}

type startKey struct{}

func (t *statementTimer) record(on bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.recording = on
}

// durations returns the statements timed so far and forgets them.
func (t *statementTimer) durations() []time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	d := t.took
	t.took = nil
	return d
}

func (t *statementTimer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	return context.WithValue(ctx, startKey{}, time.Now())
}

func (t *statementTimer) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryEndData) {
	start, _ := ctx.Value(startKey{}).(time.Time)
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.recording {
		t.took = append(t.took, time.Since(start))
	}
}

// reportSweep prints a row per scenario and side, then what the sweeps did and the ratios
// of the scenario during the sweep to the scenario alone.
func reportSweep(out io.Writer, results []sweepResult) error {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	table := &textout.Printer{W: tw}
	table.Printf("scenario\tsweep\treq/s\tp50\tp95\tp99\terrors\t\n")
	for _, r := range results {
		for _, side := range []struct {
			label string
			s     sample
		}{{"no", r.alone}, {"yes", r.during}} {
			l := side.s.latencies
			table.Printf("%s\t%s\t%s\t%s\t%s\t%s\t%d\t\n", r.name, side.label, fmtRate(side.s.rate()),
				fmtMillis(percentile(l, 0.50)), fmtMillis(percentile(l, 0.95)), fmtMillis(percentile(l, 0.99)), side.s.errors)
		}
	}
	if err := textout.FlushTable(table, tw); err != nil {
		return err
	}
	p := &textout.Printer{W: out}
	for _, r := range results {
		st := slices.Sorted(slices.Values(r.statements))
		p.Printf("%s: swept %d keys in %.1f s (%s a second) in %d statements: p50 %s, p99 %s, longest %s\n", r.name, r.swept,
			r.sweepTime.Seconds(), fmtRate(float64(r.swept)/r.sweepTime.Seconds()), len(st),
			fmtMillis(percentile(st, 0.50)), fmtMillis(percentile(st, 0.99)), fmtMillis(percentile(st, 1)))
		a, d := r.alone.latencies, r.during.latencies
		p.Printf("%s during the sweep / alone: req/s %s, p50 %s, p99 %s\n", r.name,
			fmtRatio(r.during.rate(), r.alone.rate()),
			fmtRatio(float64(percentile(d, 0.50)), float64(percentile(a, 0.50))),
			fmtRatio(float64(percentile(d, 0.99)), float64(percentile(a, 0.99))))
		for _, s := range []sample{r.alone, r.during} {
			if s.firstErr != nil {
				p.Printf("%s: first error: %v\n", r.name, s.firstErr)
				break
			}
		}
	}
	return p.Err
}

// fmtRatio is a over b with two decimals, or "-" when b is 0.
func fmtRatio(a, b float64) string {
	if b == 0 {
		return "-"
	}
	return strings.TrimSpace(strconv.FormatFloat(a/b, 'f', 2, 64))
}
