package main

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestCostPerRequest: what the slices spent, added up, divided by the requests they
// answered; a side with a failed reading or no requests has no figure.
func TestCostPerRequest(t *testing.T) {
	var c cost
	c.add(1000, spent{cpu: 100 * time.Millisecond, reads: 4000, writes: 2000}, nil, spent{cpu: 30 * time.Millisecond}, nil)
	c.add(1000, spent{cpu: 76 * time.Millisecond, reads: 4500, writes: 2100}, nil, spent{cpu: 50 * time.Millisecond}, nil)
	want := perRequest{cpu: 88, pgCPU: 40, reads: 4.25, writes: 2.05, server: true, pg: true}
	if got := c.perRequest(); got != want {
		t.Errorf("perRequest = %+v, want %+v", got, want)
	}

	c.add(1000, spent{}, nil, spent{}, errors.New("postmaster 500: gone"))
	if got := c.perRequest(); !got.server || got.pg {
		t.Errorf("after a failed PostgreSQL reading: %+v, want the server's figures only", got)
	}
	if got := (cost{}).perRequest(); got.server || got.pg {
		t.Errorf("no requests: %+v, want no figures", got)
	}
}

func TestReportCostsPrintsBothServersAndWhatIsMissing(t *testing.T) {
	ours := cost{requests: 1000, server: spent{cpu: 88 * time.Millisecond, reads: 4000, writes: 2000}, pgErr: errors.New("no -database-url")}
	floor := cost{requests: 1000, server: spent{cpu: 40 * time.Millisecond, reads: 4000, writes: 2000}, pgErr: errors.New("no -database-url")}
	results := []result{
		{name: "get", sample: sample{requests: 1000, elapsed: time.Second}, floor: comparison{rate: 2000}, cost: costFigures{own: ours, floor: floor}},
		{name: "race", sample: sample{requests: 64, elapsed: time.Second}},
	}
	var out bytes.Buffer
	if err := reportCosts(&out, results); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(out.String(), "\n")
	for i, want := range [][]string{
		{"scenario", "server", "req/s", "cpu", "µs/req", "pg", "cpu", "µs/req", "reads/req", "writes/req"},
		{"get", "payments-api", "1000", "88", "-", "4.00", "2.00"},
		{"get", "minimal", "2000", "40", "-", "4.00", "2.00"},
	} {
		if got := strings.Fields(lines[i]); strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("line %d: %q, want %q", i, lines[i], strings.Join(want, " "))
		}
	}
	for _, want := range []string{"get: CPU per request 2.20 × the minimal server's\n", "PostgreSQL CPU not measured: no -database-url\n"} {
		if strings.Count(out.String(), want) != 1 {
			t.Errorf("want %q once in\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "race") {
		t.Errorf("a row for the race, which is not measured in slices:\n%s", out.String())
	}
}

// TestCostIsMeasuredAroundEachSlice runs get and create against a server in this process,
// which stands in for the minimal server too: its PID is the test's own, found from the
// port it listens on, and PostgreSQL's from the database URL. Every figure is measured.
func TestCostIsMeasuredAroundEachSlice(t *testing.T) {
	baseURL, databaseURL := startServer(t)
	results, out := runShort(t, config{
		URL: baseURL, APIKey: smokeKey, DatabaseURL: databaseURL, MinimalURL: baseURL,
		Scenarios: []string{"get", "create"},
	})
	// PostgreSQL's CPU moves in clock ticks of 10 ms, more than a short get slice may cost
	// it (see TestTiersAreMeasuredAroundEachSlice): above zero over each side's scenarios.
	pgCPU := map[string]float64{}
	for _, r := range results {
		for side, c := range map[string]cost{"payments-api": r.cost.own, "minimal": r.cost.floor} {
			p := c.perRequest()
			if !p.server || !p.pg || p.cpu <= 0 || p.reads <= 0 || p.writes <= 0 {
				t.Errorf("%s on %s: %+v (%v, %v), want every figure", r.name, side, p, c.serverErr, c.pgErr)
			}
			pgCPU[side] += p.pgCPU
		}
	}
	for _, side := range []string{"payments-api", "minimal"} {
		if pgCPU[side] <= 0 {
			t.Errorf("%s: PostgreSQL spent nothing over get and create", side)
		}
	}
	if !strings.Contains(out, "cpu µs/req") || strings.Contains(out, "not measured") {
		t.Errorf("cost table missing or incomplete in\n%s", out)
	}
}
