package main

import (
	"bytes"
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestClientsSweepFlags(t *testing.T) {
	const floor = "-minimal-url=http://127.0.0.1:8081"
	cfg, err := parseFlags([]string{"-clients-sweep", "1,8,64,256", floor})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cfg.ClientsSweep, []int{1, 8, 64, 256}) || !slices.Equal(cfg.Scenarios, []string{"get", "create"}) {
		t.Errorf("clients %v, scenarios %v; want 1,8,64,256 and the minimal server's get,create", cfg.ClientsSweep, cfg.Scenarios)
	}
	if cfg, err := parseFlags([]string{"-clients-sweep", "4", "-scenarios", "create", floor}); err != nil || !slices.Equal(cfg.Scenarios, []string{"create"}) {
		t.Errorf("-scenarios create: %v, %v; want create alone", cfg.Scenarios, err)
	}
	for _, tt := range []struct {
		args []string
		want string // what the error names
	}{
		{[]string{"-clients-sweep", "1,x", floor}, `"x"`},
		{[]string{"-clients-sweep", "1,,8", floor}, `""`},
		{[]string{"-clients-sweep", "0", floor}, `"0"`},
		{[]string{"-clients-sweep", "2000", floor}, `"2000"`},
		{[]string{"-clients-sweep", "1,8"}, "needs -minimal-url"},
		{[]string{"-clients-sweep", "1,8", "-scenarios", "get,list", floor}, `"list"`},
		{[]string{"-clients-sweep", "1,8", "-sweep-keys", "10", floor}, "mode of its own"},
	} {
		if _, err := parseFlags(tt.args); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("payments-load %v: %v, want an error naming %s", tt.args, err, tt.want)
		}
	}
}

// TestClientsSweepComparesAtEachCount sweeps get and create at 1 and 3 clients against a
// server that stands in for the minimal server too, and a stand-in for stripe-mock: every
// count of every scenario has rates, latencies and CPU on both sides, a rate and a ratio
// against stripe-mock, and a row in the table. Each client sends at most 3 requests a
// slice, and a slice ends when every client is done, so the count of requests says how many
// clients sent them.
func TestClientsSweepComparesAtEachCount(t *testing.T) {
	baseURL, databaseURL := startServer(t)
	mock, mockURL := startFakeStripeMock(t, http.StatusOK)
	cfg := config{
		URL: baseURL, APIKey: smokeKey, DatabaseURL: databaseURL, MinimalURL: baseURL, StripeMock: mockURL,
		Duration: 10 * time.Second, Slices: 2, Concurrency: 8, RaceSize: 64,
		Scenarios: []string{"get", "create"}, ClientsSweep: []int{1, 3}, MaxPerWorker: 3,
	}
	if err := cfg.validate(); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rows, err := runClientsSweep(ctx, cfg, &out)
	if err != nil {
		t.Fatalf("runClientsSweep: %v\n%s", err, out.String())
	}
	if len(rows) != 4 {
		t.Fatalf("%d rows, want get and create at 1 and 3 clients:\n%s", len(rows), out.String())
	}
	for i, r := range rows {
		if want := cfg.ClientsSweep[i%2]; r.clients != want || r.name != cfg.Scenarios[i/2] {
			t.Errorf("row %d: %s with %d clients, want %s with %d", i, r.name, r.clients, cfg.Scenarios[i/2], want)
		}
		want := 3 * r.clients * cfg.Slices
		if len(r.own.latencies) != want || len(r.floor.latencies) != want || r.ratio <= 0 {
			t.Errorf("%s with %d clients: %d and %d answers, want %d; ratio %v (%v, %v)", r.name, r.clients,
				len(r.own.latencies), len(r.floor.latencies), want, r.ratio, r.own.firstErr, r.floor.firstErr)
		}
		if !r.cost.own.perRequest().server || !r.cost.floor.perRequest().server {
			t.Errorf("%s with %d clients: no CPU figure (%v, %v)", r.name, r.clients, r.cost.own.serverErr, r.cost.floor.serverErr)
		}
		if r.stripeMock.rate <= 0 || r.stripeMock.ratio <= 0 || r.stripeMock.note != "" {
			t.Errorf("%s with %d clients against stripe-mock: rate %v, ratio %v, %s", r.name, r.clients, r.stripeMock.rate, r.stripeMock.ratio, r.stripeMock.note)
		}
	}
	// The creates of both counts, each client's three in each slice.
	if got, want := len(mock.createKeys()), 3*(1+3)*cfg.Slices; got != want {
		t.Errorf("stripe-mock received %d creates, want %d", got, want)
	}
	if !strings.Contains(out.String(), "minimal p99") || !strings.Contains(out.String(), "ratio vs stripe-mock") {
		t.Errorf("no table in\n%s", out.String())
	}
}
