package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

func TestConfigRefusesANonLoopbackFloor(t *testing.T) {
	cfg := config{
		URL: "http://127.0.0.1:8080", MinimalURL: "http://10.0.0.1:8081", Duration: time.Second,
		Slices: 1, Concurrency: 1, RaceSize: 2, MaxPerWorker: 1, Scenarios: []string{"get"},
	}
	if err := cfg.validate(); err == nil || !strings.Contains(err.Error(), "-minimal-url") {
		t.Errorf("validate: %v, want a refusal naming -minimal-url", err)
	}
}

// runShort runs cfg's scenarios in two short slices with two clients, as the tests of the
// comparisons need, and returns the results and what the tool printed.
func runShort(t *testing.T, cfg config) ([]result, string) {
	t.Helper()
	cfg.Duration, cfg.Slices, cfg.Concurrency, cfg.RaceSize, cfg.MaxPerWorker = 300*time.Millisecond, 2, 2, 8, 10_000
	if err := cfg.validate(); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	results, err := run(ctx, cfg, &out)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	return results, out.String()
}
