package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/payments-api/payments-api/internal/textout"
)

// The clients sweep (-clients-sweep 1,8,64,256) measures how our server and the minimal
// server hold up as clients are added: each scenario the minimal server serves runs at each
// count of clients against both, in alternating slices as the floor comparison does, and the
// report gives rate, p99 and CPU per request of both at each count. With -stripe-mock-url,
// stripe-mock runs a slice of its own after each of the floor's, and the report gives its
// rate and ours over it too. (The -sweep-keys comparison, sweep.go, is another thing: the
// idempotency-key sweep under load.)

// maxClients bounds -clients-sweep: each client holds a connection to each server, and
// two fixture payments made at setup.
const maxClients = 1024

// clientsRow is one scenario at one count of clients, on both servers.
type clientsRow struct {
	name       string
	clients    int
	own, floor sample  // all slices merged, latencies sorted
	ratio      float64 // median of the slices' ours/minimal rate ratios
	note       string
	stripeMock comparison // zero without -stripe-mock-url
	cost       costFigures
}

// setClientsSweep reads -clients-sweep's "1,8,64,256". Unless -scenarios was given, the
// sweep runs every scenario the minimal server serves.
func (c *config) setClientsSweep(list string, scenariosGiven bool) error {
	for part := range strings.SplitSeq(list, ",") {
		n, err := strconv.Atoi(part)
		if err != nil || n < 1 || n > maxClients {
			return fmt.Errorf("-clients-sweep %q: want a comma-separated list of client counts from 1 to %d", part, maxClients)
		}
		c.ClientsSweep = append(c.ClientsSweep, n)
	}
	if !scenariosGiven {
		c.Scenarios = []string{"get", "create"}
	}
	return nil
}

// flagGiven reports whether the command line set the flag name.
func flagGiven(fs *flag.FlagSet, name string) bool {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}

// validateClientsSweep checks -clients-sweep: it compares with the floor, so it needs the
// minimal server and only the scenarios the minimal server answers.
func (c config) validateClientsSweep() []error {
	if len(c.ClientsSweep) == 0 {
		return nil
	}
	var errs []error
	if c.MinimalURL == "" {
		errs = append(errs, errors.New("-clients-sweep needs -minimal-url: it compares the server with the minimal server"))
	}
	if i := slices.IndexFunc(c.Scenarios, func(name string) bool { return !floorScenarios[name] }); i >= 0 {
		errs = append(errs, fmt.Errorf("-clients-sweep: the minimal server does not serve %q (want -scenarios get,create or one of them)", c.Scenarios[i]))
	}
	if c.SweepKeys > 0 || c.Preload > 0 || len(c.Scale) > 0 {
		errs = append(errs, errors.New("-clients-sweep is a mode of its own: leave out -sweep-keys, -preload and -scale"))
	}
	return errs
}

// runClientsSweep measures every configured scenario at every count of clients, in the
// order given, and prints the table to out.
func runClientsSweep(ctx context.Context, cfg config, out io.Writer) ([]clientsRow, error) {
	most := slices.Max(cfg.ClientsSweep)
	c := newClient(cfg.URL, cfg.APIKey, most)
	defer c.http.CloseIdleConnections()
	fix, err := c.setup(ctx, most)
	if err != nil {
		return nil, fmt.Errorf("setup: %w", err)
	}
	fl := newPeer(cfg.MinimalURL, cfg.APIKey, most, fix, floorScenarios)
	defer fl.close()
	sm := newStripeMock(cfg.StripeMock, most)
	defer sm.close()
	meters := newCostMeters(ctx, cfg)
	var rows []clientsRow
	for _, name := range cfg.Scenarios {
		for _, n := range cfg.ClientsSweep {
			if _, err := fmt.Fprintf(out, "running %s, clients: %d...\n", name, n); err != nil {
				return rows, err
			}
			rows = append(rows, measureClients(ctx, cfg, n, c, fix, fl, sm, meters, name))
			if ctx.Err() != nil {
				return rows, ctx.Err()
			}
		}
	}
	return rows, reportClientsSweep(out, rows)
}

// measureClients runs one scenario with n clients for cfg.Duration in cfg.Slices slices,
// each followed by a slice as long against the minimal server, and one against stripe-mock
// when sm is not nil.
func measureClients(ctx context.Context, cfg config, n int, c *client, f *fixtures, fl *peer, sm *stripeMock, m costMeters, name string) clientsRow {
	w := scenarios[scenarioIndex(name)].workload(c, f)
	floorWork, mockWork := fl.workload(name), sm.workload(name)
	slice := cfg.Duration / time.Duration(cfg.Slices)
	row := clientsRow{name: name, clients: n}
	var own, atFloor, atMock []sample
	for range cfg.Slices {
		own = append(own, m.own.runSlice(ctx, &row.cost.own, n, slice, cfg.MaxPerWorker, w))
		atFloor = append(atFloor, m.floor.runSlice(ctx, &row.cost.floor, n, slice, cfg.MaxPerWorker, floorWork))
		if mockWork != nil {
			atMock = append(atMock, runSlice(ctx, n, slice, cfg.MaxPerWorker, mockWork))
		}
	}
	row.stripeMock = compare(own, atMock, "stripe-mock")
	for _, s := range own {
		row.own.merge(s)
	}
	for _, s := range atFloor {
		row.floor.merge(s)
	}
	slices.Sort(row.own.latencies)
	slices.Sort(row.floor.latencies)
	_, row.ratio, row.note = compareSlices(own, atFloor, "minimal server")
	return row
}

// reportClientsSweep prints a row per scenario and count of clients, then the errors. An
// error is an answer too, and counts in the rates and the CPU per request: a row with errors
// says less about the server than one without.
func reportClientsSweep(out io.Writer, rows []clientsRow) error {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	table := &textout.Printer{W: tw}
	table.Printf("scenario\tclients\treq/s\tp99\terrors\tminimal req/s\tminimal p99\tminimal errors\tratio\tcpu µs/req\tminimal cpu µs/req\tstripe-mock req/s\tratio vs stripe-mock\t\n")
	for _, r := range rows {
		mockRate, mockRatio := "-", "-"
		if r.stripeMock.rate > 0 {
			mockRate, mockRatio = fmtRate(r.stripeMock.rate), fmt.Sprintf("%.2f", r.stripeMock.ratio)
		}
		table.Printf("%s\t%d\t%s\t%s\t%d\t%s\t%s\t%d\t%.2f\t%s\t%s\t%s\t%s\t\n", r.name, r.clients,
			fmtRate(r.own.rate()), fmtMillis(percentile(r.own.latencies, 0.99)), r.own.errors,
			fmtRate(r.floor.rate()), fmtMillis(percentile(r.floor.latencies, 0.99)), r.floor.errors, r.ratio,
			fmtCPU(r.cost.own.perRequest()), fmtCPU(r.cost.floor.perRequest()), mockRate, mockRatio)
	}
	if err := textout.FlushTable(table, tw); err != nil {
		return err
	}
	p := &textout.Printer{W: out}
	for _, r := range rows {
		for _, note := range []string{r.note, r.stripeMock.note} {
			if note != "" {
				p.Printf("%s with %d clients: %s\n", r.name, r.clients, note)
			}
		}
		if r.own.firstErr != nil {
			p.Printf("%s with %d clients: first error: %v\n", r.name, r.clients, r.own.firstErr)
		}
	}
	results := make([]result, len(rows))
	for i, r := range rows {
		results[i] = result{name: r.name, cost: r.cost}
	}
	printCostErrors(p, results)
	return p.Err
}
