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
	"github.com/payments-api/payments-api/internal/metrics"
	"github.com/payments-api/payments-api/internal/ratelimit"
	"github.com/payments-api/payments-api/internal/testing/apitest"
	"github.com/payments-api/payments-api/internal/testing/apptest"
	"github.com/payments-api/payments-api/internal/testing/dbtest"
)

const testKey = "sk_test_app_wiring"

// memoryLimits are limits no test here reaches.
var memoryLimits = apptest.Fixed(apptest.Limits(ratelimit.Rate{Quota: 1000, Window: time.Second}))

// TestNewMigratesAndSeeds: on a database with no schema at all, New migrates it and gives
// each demo key its account, so the key is accepted at once.
func TestNewMigratesAndSeeds(t *testing.T) {
	t.Parallel()
	a, err := app.New(context.Background(), apptest.Config(dbtest.NewEmptyURL(t), testKey), slog.New(slog.DiscardHandler), memoryLimits)
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
	failing := func(*metrics.Metrics) (*ratelimit.Limits, func(), error) { return nil, nil, errors.New("no limits") }
	if _, err := app.New(context.Background(), apptest.Config(url, testKey), slog.New(slog.DiscardHandler), failing); err == nil {
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
