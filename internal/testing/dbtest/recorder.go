package dbtest

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Statement is one statement a recorded pool ran.
type Statement struct {
	Query string // the sqlc query's name, or the statement's first line
	Rows  int64  // rows it inserted, updated or deleted
}

// Recorder remembers every statement its pool runs, so a test can check how a piece of
// work was split into statements (how many, and how many rows each touched).
type Recorder struct {
	mu  sync.Mutex
	all []Statement
}

// NewRecordedPool creates a fresh migrated database for t and a pool connected to it that
// records its statements, closed when t ends.
func NewRecordedPool(t testing.TB) (*pgxpool.Pool, *Recorder) {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(NewURL(t))
	if err != nil {
		t.Fatal(err)
	}
	rec := &Recorder{}
	cfg.ConnConfig.Tracer = rec
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatalf("connect to test database: %v", err)
	}
	t.Cleanup(pool.Close)
	return pool, rec
}

// Named returns the statements of the sqlc query name, in the order they ran.
func (r *Recorder) Named(name string) []Statement {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Statement
	for _, s := range r.all {
		if s.Query == name {
			out = append(out, s)
		}
	}
	return out
}

// Reset forgets every statement recorded so far.
func (r *Recorder) Reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.all = nil
}

type queryKey struct{}

// TraceQueryStart passes the statement's name on to TraceQueryEnd.
func (r *Recorder) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	return context.WithValue(ctx, queryKey{}, queryName(data.SQL))
}

// TraceQueryEnd records the statement and the rows it touched.
func (r *Recorder) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryEndData) {
	name, _ := ctx.Value(queryKey{}).(string)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.all = append(r.all, Statement{Query: name, Rows: data.CommandTag.RowsAffected()})
}

// queryName is what sqlc's first line says ("-- name: EventList :many" is EventList), or
// the first line of any other statement.
func queryName(sql string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(sql), "\n")
	if rest, ok := strings.CutPrefix(line, "-- name: "); ok {
		name, _, _ := strings.Cut(rest, " ")
		return name
	}
	return line
}
