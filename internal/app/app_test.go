package app_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/payments-api/payments-api/internal/app"
	"github.com/payments-api/payments-api/internal/handlers"
	"github.com/payments-api/payments-api/internal/metrics"
	"github.com/payments-api/payments-api/internal/ratelimit"
	"github.com/payments-api/payments-api/internal/testing/apitest"
	"github.com/payments-api/payments-api/internal/testing/dbtest"
)

const testKey = "sk_test_app_wiring"

func config(url string) app.Config {
	return app.Config{
		DatabaseURL:            url,
		DatabaseConnectTimeout: 10 * time.Second,
		DemoAPIKeys:            []string{testKey},
		Sandbox:                true,
		IdempotencyTTL:         time.Hour,
		APIKeyCacheSize:        10,
		JobTimeout:             time.Minute,
		JobRescueAfter:         2 * time.Minute,
		ReportRetention:        time.Hour,
		EventRetention:         time.Hour,
	}
}

func memoryLimits(*metrics.Metrics) (*handlers.RateLimits, func(), error) {
	rate := ratelimit.Rate{Quota: 1000, Window: time.Second}
	return &handlers.RateLimits{
		Limiter:         ratelimit.NewMemory(),
		Default:         ratelimit.Policy{Name: "default", Rate: rate},
		Writes:          ratelimit.Policy{Name: "writes", Rate: rate},
		Unauthenticated: ratelimit.Policy{Name: "unauthenticated", Rate: rate},
	}, func() {}, nil
}

// TestNewMigratesAndSeeds: on a database with no schema at all, New migrates it and gives
// each demo key its account, so the key is accepted at once.
func TestNewMigratesAndSeeds(t *testing.T) {
	t.Parallel()
	a, err := app.New(context.Background(), config(dbtest.NewEmptyURL(t)), slog.New(slog.DiscardHandler), memoryLimits)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	srv := httptest.NewServer(a.Handler)
	t.Cleanup(srv.Close)
	if res := apitest.NewClient(t, srv.URL, testKey).Get("/account"); res.Status != http.StatusOK {
		t.Errorf("GET /account with a demo key: %d %s", res.Status, res.Body)
	}
}

// TestNewReleasesWhatItOpenedWhenItFails: a part that fails to build after the pool opened
// leaves no connection behind.
func TestNewReleasesWhatItOpenedWhenItFails(t *testing.T) {
	t.Parallel()
	url := dbtest.NewURL(t)
	failing := func(*metrics.Metrics) (*handlers.RateLimits, func(), error) { return nil, nil, errors.New("no limits") }
	if _, err := app.New(context.Background(), config(url), slog.New(slog.DiscardHandler), failing); err == nil {
		t.Fatal("New succeeded without its rate limits")
	}
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var open int
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		err := conn.QueryRow(context.Background(),
			`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`).Scan(&open)
		if err != nil {
			t.Fatal(err)
		}
		if open == 0 {
			return
		}
	}
	t.Errorf("%d connections still open after New failed", open)
}
