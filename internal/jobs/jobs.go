// Package jobs runs background work on River, a job queue that lives in PostgreSQL: a job
// is a row inserted in the transaction that asks for it (InsertTx), so it exists if and only
// if that transaction commits, survives any restart, and is fetched by exactly one worker
// (SELECT ... FOR UPDATE SKIP LOCKED). This package builds the River client from the
// configuration and runs the periodic sweeps; the workers themselves live with the domain
// they serve (internal/reports) and internal/app registers them here. The /jobs resource a
// client polls is a report's job, and lives in internal/reports too.
//
// It imports River, pgx, db (its own statements) and metrics (the queue depth it reports),
// never a domain package: internal/app wires the two.
package jobs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	oteltrace "go.opentelemetry.io/otel/trace"
)

// Config is how a process runs jobs.
type Config struct {
	// Workers is how many jobs this process runs at once.
	Workers int
	// Timeout cancels a job's context after this long; the job is then retried.
	Timeout time.Duration
	// RescueAfter is when a job whose worker died (its process was killed) is run again.
	// River refuses a value below Timeout: a slow but live worker must time out first.
	RescueAfter time.Duration
	// Work is false in an API-only process: its client inserts and cancels jobs but never
	// fetches one, runs no periodic job and takes no part in leader election.
	Work bool
	// Queues are the queues this process works besides the default one (which has
	// Workers), each with workers of its own, so no kind of job waits behind another.
	Queues map[string]river.QueueConfig
	// Workers' registry and the periodic jobs the elected leader enqueues.
	Registry *river.Workers
	Periodic []*river.PeriodicJob
	Logger   *slog.Logger
	// Observer is told of every job run; nil tells no one. (Config is a value handed to
	// NewClient, so the observer is a field of it rather than a WithObserver on a built value.)
	Observer Observer
	// ListenPool, when set, is where the client LISTENs for new jobs and leadership changes:
	// a pool of direct connections to PostgreSQL, for when the main pool goes through a
	// transaction pooler such as PgBouncer, which cannot keep a LISTEN (it is session state).
	ListenPool *pgxpool.Pool
	// TracerProvider, when set, traces inserts and runs (see traceJobs).
	TracerProvider oteltrace.TracerProvider
}

// Validate reports what is wrong with c, before River would.
func (c Config) Validate() error {
	var errs []error
	if c.Work && c.Workers < 1 {
		errs = append(errs, fmt.Errorf("workers must be at least 1, got %d", c.Workers))
	}
	if c.Timeout <= 0 {
		errs = append(errs, fmt.Errorf("timeout must be positive, got %s", c.Timeout))
	}
	if c.RescueAfter <= c.Timeout {
		errs = append(errs, fmt.Errorf("rescue-after (%s) must exceed the job timeout (%s)", c.RescueAfter, c.Timeout))
	}
	return errors.Join(errs...)
}

// fetchCooldown is the least time between two fetches of one queue, and between two insert
// notifications a client sends for one queue. A job inserted within the cooldown waits for
// its end, so River's default (100 ms) would hold back most webhooks' first attempts by about
// that long after their commit. A fetch is one indexed query, so fetching up to 100 times a
// second when jobs keep arriving costs little.
const fetchCooldown = 10 * time.Millisecond

// NewClient builds the River client for pool. Call Start on it to run workers (when
// c.Work); an insert-only client needs no Start.
func NewClient(pool *pgxpool.Pool, c Config) (*river.Client[pgx.Tx], error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	rc := &river.Config{
		Logger:               riverLogs(c.Logger),
		JobTimeout:           c.Timeout,
		FetchCooldown:        fetchCooldown,
		RescueStuckJobsAfter: c.RescueAfter, // River's default (1 h) is far too long for a demo backend
		Workers:              c.Registry,
	}
	if c.Work {
		rc.Queues = map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: c.Workers}}
		maps.Copy(rc.Queues, c.Queues)
		rc.PeriodicJobs = c.Periodic
	}
	rc.Middleware = observeRuns(c.Observer) // none for a nil observer
	if c.TracerProvider != nil {
		rc.Middleware = append(rc.Middleware, traceJobs(c.TracerProvider))
	}
	var driver riverdriver.Driver[pgx.Tx] = riverpgxv5.New(pool)
	if c.ListenPool != nil && c.ListenPool != pool {
		driver = listenApart{Driver: riverpgxv5.New(pool), listener: riverpgxv5.New(c.ListenPool)}
	}
	client, err := river.NewClient(driver, rc)
	if err != nil {
		return nil, fmt.Errorf("create job client: %w", err)
	}
	return client, nil
}

// listenApart is River's pgx driver with its LISTEN connection taken from another pool.
type listenApart struct {
	*riverpgxv5.Driver
	listener *riverpgxv5.Driver
}

func (d listenApart) GetListener(params *riverdriver.GetListenenerParams) riverdriver.Listener {
	return d.listener.GetListener(params)
}

// riverLogs is the logger River writes to: the process's, with River's records capped at
// WARN. River logs a lost database connection at ERROR and then reconnects and retries on its
// own; in this server ERROR means an internal error someone must look at, and a database
// outage is not one (the API answers 503 meanwhile). A job that fails for good is recorded on
// the job itself and in the outbox.
//
// And each message at most once per repeatInterval: while the database is down River logs the
// same failure on every poll of every queue, several lines a second per process, which would
// bury the lines that say what happened. The next line of a message says how many of it were
// left out since the last one (repeated).
func riverLogs(logger *slog.Logger) *slog.Logger {
	return slog.New(riverHandler{Handler: logger.Handler(), max: slog.LevelWarn, repeats: &repeats{last: map[string]*repeat{}}})
}

// repeatInterval is how often one message of River's may be logged.
const repeatInterval = 10 * time.Second

type riverHandler struct {
	slog.Handler
	max     slog.Level
	repeats *repeats // shared by the handler's copies (WithAttrs, WithGroup)
}

func (h riverHandler) Handle(ctx context.Context, r slog.Record) error {
	pass, left := h.repeats.pass(r.Message, r.Time)
	if !pass {
		return nil
	}
	if left > 0 {
		r.AddAttrs(slog.Int("repeated", left))
	}
	r.Level = min(r.Level, h.max)
	return h.Handler.Handle(ctx, r)
}

func (h riverHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return riverHandler{Handler: h.Handler.WithAttrs(attrs), max: h.max, repeats: h.repeats}
}

func (h riverHandler) WithGroup(name string) slog.Handler {
	return riverHandler{Handler: h.Handler.WithGroup(name), max: h.max, repeats: h.repeats}
}

// repeats remembers, per message, when it was last logged and how many of it were left out
// since.
type repeats struct {
	mu   sync.Mutex
	last map[string]*repeat
}

type repeat struct {
	at   time.Time
	left int
}

// pass reports whether message, logged at t, goes out, and how many of it were left out
// before it.
func (r *repeats) pass(message string, t time.Time) (bool, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	last, seen := r.last[message]
	switch {
	case !seen:
		if len(r.last) >= 1000 { // River's messages are a few dozen; bound them anyway
			clear(r.last)
		}
		r.last[message] = &repeat{at: t}
		return true, 0
	case t.Sub(last.at) < repeatInterval:
		last.left++
		return false, 0
	}
	left := last.left
	*last = repeat{at: t}
	return true, left
}
