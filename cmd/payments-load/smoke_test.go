package main

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/payments-api/payments-api/internal/app"
	"github.com/payments-api/payments-api/internal/ratelimit"
	"github.com/payments-api/payments-api/internal/testing/apptest"
	"github.com/payments-api/payments-api/internal/testing/dbtest"
)

const smokeKey = "sk_test_payments_load"

// startServer is the real application on a fresh database, as main builds it; it runs no
// job workers.
func startServer(t *testing.T) (baseURL, databaseURL string) {
	t.Helper()
	baseURL, databaseURL, _ = startServerWith(t, false)
	return baseURL, databaseURL
}

// startServerWith is startServer, with job workers that build its reports (and deliver its
// webhooks) when withReports is true. It also returns the server's pool.
func startServerWith(t *testing.T, withReports bool) (baseURL, databaseURL string, _ *pgxpool.Pool) {
	t.Helper()
	cfg := apptest.Config(dbtest.NewURL(t), smokeKey)
	cfg.Work = withReports
	// No Limiter: rate limits off, as a load test runs the server (RATE_LIMIT_DISABLED).
	limits := &ratelimit.Limits{
		Default: ratelimit.Policy{Name: "default", Rate: ratelimit.Rate{Quota: 100, Window: time.Second}},
		Writes:  ratelimit.Policy{Name: "writes", Rate: ratelimit.Rate{Quota: 25, Window: time.Second}},
	}
	a, err := app.New(context.Background(), cfg, slog.New(slog.DiscardHandler), apptest.Fixed(limits))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	if withReports {
		if err := a.StartJobs(context.Background()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := a.StopJobs(ctx); err != nil {
				t.Errorf("stop the job workers: %v", err)
			}
		})
	}
	srv := httptest.NewServer(a.Handler)
	t.Cleanup(srv.Close)
	return srv.URL, cfg.DatabaseURL, a.Pool
}

// TestEveryScenarioRunsCleanly runs every scenario and both baselines briefly against a
// real server: every scenario sends requests and gets only the answers it expects, the race
// charges exactly once per round, ratios are computed, and the chart is well-formed SVG.
func TestEveryScenarioRunsCleanly(t *testing.T) {
	baseURL, databaseURL := startServer(t)
	cfg := config{
		URL: baseURL, APIKey: smokeKey, DatabaseURL: databaseURL,
		Duration: 400 * time.Millisecond, Slices: 2, Concurrency: 2, RaceSize: 8,
		Scenarios: scenarioNames(), SVG: filepath.Join(t.TempDir(), "chart.svg"), MaxPerWorker: 10_000,
	}
	if err := cfg.validate(); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a hang fails instead of stalling the package
	defer cancel()
	results, err := run(ctx, cfg, &out)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	if len(results) != len(scenarios) {
		t.Fatalf("%d results for %d scenarios", len(results), len(scenarios))
	}
	for _, r := range results {
		if r.requests == 0 || r.errors != 0 {
			t.Errorf("%s: %d requests, %d errors (first: %v)", r.name, r.requests, r.errors, r.firstErr)
		}
		if r.baseline != "" && (r.ratio <= 0 || r.baselineRate <= 0) {
			t.Errorf("%s: ratio %v to %s at %v/s", r.name, r.ratio, r.baseline, r.baselineRate)
		}
		if !strings.Contains(out.String(), "\n"+r.name) && !strings.Contains(out.String(), " "+r.name+" ") {
			t.Errorf("the table has no row for %s", r.name)
		}
	}
	if !strings.Contains(out.String(), "server RSS: ") {
		t.Errorf("no RSS read from /metrics in\n%s", out.String())
	}
	if !regexp.MustCompile(`\ncpu steal: \d+\.\d % of the machine's CPU time during the load\n`).MatchString(out.String()) {
		t.Errorf("no steal share in\n%s", out.String())
	}
	checkSVG(t, cfg.SVG, scenarioNames())
}

func checkSVG(t *testing.T, path string, names []string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := xml.NewDecoder(bytes.NewReader(data))
	for {
		_, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("chart is not well-formed XML: %v", err)
		}
	}
	for _, name := range names {
		if !bytes.Contains(data, []byte(">"+name+"<")) {
			t.Errorf("chart has no row for %s", name)
		}
	}
}

func TestConfigRefusesNonLoopbackTargets(t *testing.T) {
	base := config{
		URL: "http://127.0.0.1:8080", Duration: time.Second, Slices: 1, Concurrency: 1, RaceSize: 2,
		MaxPerWorker: 1, Scenarios: []string{"get"},
	}
	if err := base.validate(); err != nil {
		t.Fatalf("loopback config refused: %v", err)
	}
	for _, tt := range []struct{ url, db string }{
		{"http://10.0.0.1:8080", ""},
		{"http://example.com", ""},
		{"http://127.0.0.1:8080", "postgres://u@192.168.1.5:5432/db"},
	} {
		cfg := base
		cfg.URL, cfg.DatabaseURL = tt.url, tt.db
		if err := cfg.validate(); err == nil || !strings.Contains(err.Error(), "loopback") {
			t.Errorf("url %s, db %q: %v, want a refusal naming loopback", tt.url, tt.db, err)
		}
	}
	scale := base
	scale.Scale = []scaleServer{{rows: 0, url: "http://127.0.0.1:8101"}, {rows: 100, url: "http://10.0.0.1:8102"}}
	if err := scale.validate(); err == nil || !strings.Contains(err.Error(), "loopback") {
		t.Errorf("-scale with a server at 10.0.0.1: %v, want a refusal naming loopback", err)
	}
	for _, ok := range []string{"http://localhost:8080", "http://[::1]:8080"} {
		cfg := base
		cfg.URL = ok
		if err := cfg.validate(); err != nil {
			t.Errorf("%s refused: %v", ok, err)
		}
	}
}

// TestSweepComparisonRunsCleanly runs a scenario alone and while swept keys go, briefly,
// against a real server: both sides send requests without errors, every inserted key is
// swept, in batches, and the table and the ratios are printed.
func TestSweepComparisonRunsCleanly(t *testing.T) {
	baseURL, databaseURL := startServer(t)
	cfg := config{
		URL: baseURL, APIKey: smokeKey, DatabaseURL: databaseURL,
		Duration: 400 * time.Millisecond, Slices: 2, Concurrency: 2, RaceSize: 8,
		Scenarios: []string{"get", "create"}, MaxPerWorker: 10_000, SweepKeys: 1200,
	}
	if err := cfg.validate(); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := newClient(cfg.URL, cfg.APIKey, cfg.Concurrency)
	results, err := runSweepComparison(ctx, cfg, c, &out)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	for _, r := range results {
		if r.alone.requests == 0 || r.during.requests == 0 || r.alone.errors+r.during.errors != 0 {
			t.Errorf("%s: %d requests alone, %d during the sweep, %d errors", r.name, r.alone.requests, r.during.requests, r.alone.errors+r.during.errors)
		}
		if r.swept != 2*1200 || len(r.statements) != 2*3 { // 1200 keys are three batches of 500
			t.Errorf("%s: swept %d keys in %d statements, want 2400 in 6", r.name, r.swept, len(r.statements))
		}
	}
	if !strings.Contains(out.String(), "during the sweep / alone: req/s ") {
		t.Errorf("no ratios in\n%s", out.String())
	}
}

// TestScaleComparisonRunsCleanly runs -scale briefly against two real servers, one empty and
// one with a few hundred preloaded payments, each with report workers: every operation at
// both sizes sends requests without an error (a report counts when its job succeeded), the
// deep page starts past the preloaded rows, and the table and the chart have a row per
// operation.
func TestScaleComparisonRunsCleanly(t *testing.T) {
	const preloaded = 300
	emptyURL, _, _ := startServerWith(t, true)
	loadedURL, _, pool := startServerWith(t, true)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a hang fails instead of stalling the package
	defer cancel()
	if _, _, err := preload(ctx, pool, smokeKey, preloaded); err != nil {
		t.Fatal(err)
	}
	cfg := config{
		URL: emptyURL, APIKey: smokeKey, Duration: 400 * time.Millisecond, Slices: 2, Concurrency: 2, RaceSize: 2,
		MaxPerWorker: 10_000, SVG: filepath.Join(t.TempDir(), "scale.svg"),
	}
	var err error
	if cfg.Scale, err = parseScaleServers(fmt.Sprintf("%d=%s,0=%s", preloaded, loadedURL, emptyURL)); err != nil {
		t.Fatal(err)
	}
	if err := cfg.validate(); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	results, err := runScale(ctx, cfg, &out)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	if len(results) != len(scaleOps)*len(cfg.Scale) {
		t.Fatalf("%d results for %d operations at %d sizes", len(results), len(scaleOps), len(cfg.Scale))
	}
	var names []string
	for _, r := range results {
		if r.requests == 0 || r.errors != 0 {
			t.Errorf("%s @%d rows: %d requests, %d errors (first: %v)", r.op, r.rows, r.requests, r.errors, r.firstErr)
		}
		if !slices.Contains(names, r.op) {
			names = append(names, r.op)
			if !strings.Contains(out.String(), "\n"+r.op+" ") && !strings.Contains(out.String(), " "+r.op+" ") {
				t.Errorf("the table has no row for %s", r.op)
			}
		}
	}
	// Both setups make the same payments, so the preloaded server's deep page starts lower by
	// the preloaded rows of the key's account: nine in ten.
	depth := func(url string) int {
		var d int
		for line := range strings.Lines(out.String()) {
			if _, err := fmt.Sscanf(line, url+": %d preloaded rows, deep page after row %d", new(int), &d); err == nil {
				return d
			}
		}
		t.Fatalf("no setup line for %s in\n%s", url, out.String())
		return 0
	}
	if got := depth(loadedURL) - depth(emptyURL); got != preloaded*9/10 {
		t.Errorf("the deep pages are %d rows apart, want the %d preloaded in the key's account", got, preloaded*9/10)
	}
	checkSVG(t, cfg.SVG, names)
}
