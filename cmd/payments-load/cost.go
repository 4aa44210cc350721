package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/payments-api/payments-api/internal/textout"
	"github.com/prometheus/procfs"
)

// Cost per request is the measure that does not drift with the machine: a busier or slower
// machine changes how many requests a second a server answers far more than how much CPU
// each one takes. Around every slice against our server or the minimal server, the tool
// reads what that server's processes and PostgreSQL's have spent (proc.go) and divides what
// the slice spent by the requests it answered.

// cost is what a server and PostgreSQL spent over the slices of one scenario against it.
type cost struct {
	requests         int // answered in the slices measured
	server, pg       spent
	serverErr, pgErr error // why a side has no figure: its processes not found, or a reading failed
}

func (c *cost) add(requests int, server spent, serverErr error, pg spent, pgErr error) {
	c.requests += requests
	c.server, c.pg = c.server.plus(server), c.pg.plus(pg)
	c.serverErr, c.pgErr = cmp.Or(c.serverErr, serverErr), cmp.Or(c.pgErr, pgErr)
}

// perRequest is a cost divided by the requests answered: CPU in microseconds, system calls
// as counts.
type perRequest struct {
	cpu, pgCPU, reads, writes float64
	server, pg                bool // whether the server's and PostgreSQL's figures were measured
}

func (c cost) perRequest() perRequest {
	if c.requests == 0 {
		return perRequest{}
	}
	n := float64(c.requests)
	return perRequest{
		cpu:    float64(c.server.cpu) / float64(time.Microsecond) / n,
		pgCPU:  float64(c.pg.cpu) / float64(time.Microsecond) / n,
		reads:  float64(c.server.reads) / n,
		writes: float64(c.server.writes) / n,
		server: c.serverErr == nil,
		pg:     c.pgErr == nil,
	}
}

// costFigures are a scenario's costs on our server and on the minimal server.
type costFigures struct {
	own, floor cost
}

// meter reads what one server's processes and PostgreSQL's spend around a slice. A nil
// meter measures nothing.
type meter struct {
	proc     procReader
	pids     []int // the server's processes
	pidsErr  error // why they are unknown
	postgres *pgCounter
	pgErr    error // why PostgreSQL's processes are unknown
}

// costMeters are the meters of our server and of the minimal server (nil without one), and
// of -tiers (nil without them).
type costMeters struct {
	own, floor *meter
	tiers      *tierMeter
	machine    *procReader // the machine's CPU time (see steal.go); nil without /proc
}

// machineTimes reads the machine's CPU time, or says why it cannot.
func (m costMeters) machineTimes() (cpuTimes, error) {
	if m.machine == nil {
		return cpuTimes{}, errors.New("no /proc")
	}
	return m.machine.cpuTimes()
}

func (m costMeters) tierNames() []string {
	if m.tiers == nil {
		return nil
	}
	return m.tiers.names
}

// newCostMeters finds the processes of the servers at cfg's URLs and of the PostgreSQL
// server at its database URL (when it names one). What cannot be found has no figures, and
// the report says why; the load runs all the same.
func newCostMeters(ctx context.Context, cfg config) costMeters {
	fs, err := procfs.NewDefaultFS()
	if err != nil { // not Linux, or no /proc
		m := costMeters{own: &meter{pidsErr: err, pgErr: err}}
		if cfg.MinimalURL != "" {
			m.floor = &meter{pidsErr: err, pgErr: err}
		}
		return m
	}
	r := procReader{fs: fs, tick: clockTick()}
	var postgres *pgCounter
	pgErr := errors.New("no -database-url")
	if cfg.DatabaseURL != "" {
		var postmaster int
		if postmaster, pgErr = r.postmaster(ctx, cfg.DatabaseURL); pgErr == nil {
			postgres = newPGCounter(r, postmaster) // both meters read it, each around its own slices
		}
	}
	newMeter := func(target string) *meter {
		pids, err := r.serverProcesses(target)
		return &meter{proc: r, pids: pids, pidsErr: err, postgres: postgres, pgErr: pgErr}
	}
	m := costMeters{own: newMeter(cfg.URL), tiers: newTierMeter(r, cfg.Tiers), machine: &r}
	if cfg.MinimalURL != "" {
		m.floor = newMeter(cfg.MinimalURL)
	}
	return m
}

// serverProcesses are the processes listening on target's port.
func (r procReader) serverProcesses(target string) ([]int, error) {
	port, err := urlPort(target)
	if err != nil {
		return nil, err
	}
	return r.listeners(port)
}

// runSlice is runSlice, with what the server and PostgreSQL spent during the slice added to
// into.
func (m *meter) runSlice(ctx context.Context, into *cost, workers int, d time.Duration, maxPerWorker int, w workload) sample {
	if m == nil {
		return runSlice(ctx, workers, d, maxPerWorker, w)
	}
	serverBefore, serverErr := m.server()
	pgBefore, pgErr := m.pg()
	s := runSlice(ctx, workers, d, maxPerWorker, w)
	serverAfter, err := m.server()
	serverErr = cmp.Or(serverErr, err)
	pgAfter, err := m.pg()
	pgErr = cmp.Or(pgErr, err)
	into.add(s.requests, serverAfter.since(serverBefore), serverErr, pgAfter.since(pgBefore), pgErr)
	return s
}

func (m *meter) server() (spent, error) {
	if m.pidsErr != nil {
		return spent{}, m.pidsErr
	}
	return m.proc.serverSpent(m.pids)
}

func (m *meter) pg() (spent, error) {
	if m.pgErr != nil {
		return spent{}, m.pgErr
	}
	return m.postgres.spent()
}

// reportCosts prints what a request cost on our server and on the minimal server, the
// ratios of the two, and why any figure is missing.
func reportCosts(out io.Writer, results []result) error {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	table := &textout.Printer{W: tw}
	table.Printf("scenario\tserver\treq/s\tcpu µs/req\tpg cpu µs/req\treads/req\twrites/req\t\n")
	for _, r := range results {
		if r.cost.own.requests == 0 {
			continue // the race, measured in rounds rather than slices
		}
		table.Printf("%s\tpayments-api\t%s\t%s\t\n", r.name, fmtRate(r.rate()), fmtCost(r.cost.own.perRequest()))
		if r.cost.floor.requests > 0 {
			table.Printf("%s\tminimal\t%s\t%s\t\n", r.name, fmtRate(r.floor.rate), fmtCost(r.cost.floor.perRequest()))
		}
	}
	if err := textout.FlushTable(table, tw); err != nil {
		return err
	}
	p := &textout.Printer{W: out}
	for _, r := range results {
		own, floor := r.cost.own.perRequest(), r.cost.floor.perRequest()
		if own.server && floor.server {
			p.Printf("%s: CPU per request %s × the minimal server's", r.name, fmtRatio(own.cpu, floor.cpu))
			if own.pg && floor.pg {
				p.Printf(", %s × with PostgreSQL's", fmtRatio(own.cpu+own.pgCPU, floor.cpu+floor.pgCPU))
			}
			p.Printf("\n")
		}
	}
	printCostErrors(p, results)
	return p.Err
}

// printCostErrors says once why each missing figure is missing.
func printCostErrors(p *textout.Printer, results []result) {
	seen := map[string]bool{}
	for _, r := range results {
		for _, e := range []struct {
			what string
			err  error
		}{
			{"payments-api CPU and system calls", r.cost.own.serverErr},
			{"minimal server CPU and system calls", r.cost.floor.serverErr},
			{"PostgreSQL CPU", cmp.Or(r.cost.own.pgErr, r.cost.floor.pgErr)},
		} {
			if e.err == nil {
				continue
			}
			line := fmt.Sprintf("%s not measured: %v", e.what, e.err)
			if !seen[line] {
				seen[line] = true
				p.Printf("%s\n", line)
			}
		}
	}
}

// fmtCost is a row's cost columns, "-" where not measured.
func fmtCost(c perRequest) string {
	pg, reads, writes := "-", "-", "-"
	if c.server {
		reads, writes = strconv.FormatFloat(c.reads, 'f', 2, 64), strconv.FormatFloat(c.writes, 'f', 2, 64)
	}
	if c.pg {
		pg = strconv.FormatFloat(c.pgCPU, 'f', 0, 64)
	}
	return strings.Join([]string{fmtCPU(c), pg, reads, writes}, "\t")
}

// fmtCPU is a server's CPU per request, "-" where not measured.
func fmtCPU(c perRequest) string {
	if !c.server {
		return "-"
	}
	return strconv.FormatFloat(c.cpu, 'f', 0, 64)
}
