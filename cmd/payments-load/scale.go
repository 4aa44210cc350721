package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/payments-api/payments-api/internal/textout"
)

// The scale comparison (-scale) measures the same operations against servers whose databases
// hold different numbers of preloaded payments (-preload), to show what the server's cost
// does with the data it holds. Each operation runs on every server in turn, slice after
// slice, so a busy machine slows every size alike.

// scaleServer is one server and how many payments were preloaded into its database.
type scaleServer struct {
	rows int
	url  string
}

// parseScaleServers reads "0=http://127.0.0.1:8101,100000=http://127.0.0.1:8102".
func parseScaleServers(s string) ([]scaleServer, error) {
	var servers []scaleServer
	for part := range strings.SplitSeq(s, ",") {
		rows, u, ok := strings.Cut(part, "=")
		n, err := strconv.Atoi(rows)
		if !ok || err != nil || n < 0 {
			return nil, fmt.Errorf("-scale %q: want a comma-separated list of rows=url", part)
		}
		servers = append(servers, scaleServer{rows: n, url: u})
	}
	slices.SortFunc(servers, func(a, b scaleServer) int { return a.rows - b.rows })
	return servers, nil
}

// deepPage is how many rows deep the deep list page starts.
const deepPage = 10_000

// reportRows is how many payments each server's report covers: made at setup, the same
// number at every size.
const reportRows = 100

// scaleFixtures are one server's fixtures for the scale operations.
type scaleFixtures struct {
	*fixtures
	patch      []payment // one per client; its etag follows the client's PATCHes
	deep       string    // the id deepPage rows down the account's list (or its last row)
	depth      int
	reportBody string // a report of the reportRows payments made at setup
}

func (c *client) scaleSetup(ctx context.Context, workers int) (*scaleFixtures, error) {
	from := time.Now().UTC()
	for range reportRows {
		if _, err := c.createPayment(ctx, c.key("report"), 1000); err != nil {
			return nil, err
		}
	}
	to := time.Now().UTC()
	f, err := c.setup(ctx, workers)
	if err != nil {
		return nil, err
	}
	sf := &scaleFixtures{fixtures: f, reportBody: fmt.Sprintf(`{"type":"payments","format":"csv","created_gte":%q,"created_lt":%q}`,
		from.Format(time.RFC3339Nano), to.Format(time.RFC3339Nano))}
	for range workers {
		p, err := c.createPayment(ctx, c.key("patch"), 1000)
		if err != nil {
			return nil, err
		}
		sf.patch = append(sf.patch, p)
	}
	sf.deep, sf.depth, err = c.walkList(ctx, deepPage)
	return sf, err
}

// walkList follows the payments list's cursor, 100 rows a page, and returns the id of the
// row depth rows down and how deep it is. A list shorter than that gives the row 11 from
// its end, so the page after it is still a full page of 10 (not the empty page after the
// last row, which would cost less than any real one).
func (c *client) walkList(ctx context.Context, depth int) (string, int, error) {
	last, seen := "", 0
	var recent []string // the last 11 ids seen
	for seen < depth {
		path := "/payments?limit=" + strconv.Itoa(min(100, depth-seen))
		if last != "" {
			path += "&starting_after=" + url.QueryEscape(last)
		}
		r, err := c.expect(ctx, http.StatusOK, http.MethodGet, path, "", nil)
		if err != nil {
			return "", 0, fmt.Errorf("walk the list: %w", err)
		}
		var page struct {
			Data    []struct{ ID string }
			HasMore bool `json:"has_more"`
		}
		if err := json.Unmarshal(r.body, &page); err != nil {
			return "", 0, fmt.Errorf("walk the list: %w", err)
		}
		if len(page.Data) == 0 {
			break
		}
		last, seen = page.Data[len(page.Data)-1].ID, seen+len(page.Data)
		for _, d := range page.Data {
			recent = append(recent, d.ID)
		}
		recent = recent[max(0, len(recent)-11):]
		if !page.HasMore {
			return recent[0], seen - len(recent) + 1, nil
		}
	}
	return last, seen, nil
}

// scaleOps are the operations measured at every size, in order.
var scaleOps = []struct {
	name     string
	workload func(c *client, f *scaleFixtures) workload
}{
	{"create", func(c *client, _ *scaleFixtures) workload { return c.create }},
	{"get", func(c *client, f *scaleFixtures) workload { return c.get(f.fixtures) }},
	{"get-304", func(c *client, f *scaleFixtures) workload { return c.getNotModified(f.fixtures) }},
	{"patch", (*client).patch},
	{"refund", func(c *client, f *scaleFixtures) workload { return c.refund(f.fixtures) }},
	{"list", func(c *client, _ *scaleFixtures) workload { return c.list }},
	{"list-deep", (*client).listDeep},
	{"report", (*client).report},
}

// patch changes the client's payment with If-Match, its current ETag.
func (c *client) patch(f *scaleFixtures) workload {
	return func(ctx context.Context, worker, i int) error {
		p := &f.patch[worker]
		r, err := c.expect(ctx, http.StatusOK, http.MethodPatch, "/payments/"+p.id, fmt.Sprintf(`{"metadata":{"n":"%d"}}`, i),
			map[string]string{"If-Match": p.etag})
		if err == nil {
			p.etag = r.etag
			return nil
		}
		// A PATCH that failed may still have changed the payment (an answer lost to a
		// timeout): read its ETag again, or every later PATCH of this worker answers 412.
		if cur, gerr := c.expect(ctx, http.StatusOK, http.MethodGet, "/payments/"+p.id, "", nil); gerr == nil {
			p.etag = cur.etag
		}
		return err
	}
}

func (c *client) listDeep(f *scaleFixtures) workload {
	path := "/payments?limit=10&starting_after=" + url.QueryEscape(f.deep)
	return func(ctx context.Context, _, _ int) error {
		_, err := c.expect(ctx, http.StatusOK, http.MethodGet, path, "", nil)
		return err
	}
}

// reportTimeout bounds one report build, from the request to the job's end.
const reportTimeout = time.Minute

// reportPoll is how often a report's job is polled: the build's time is known to within it.
const reportPoll = 10 * time.Millisecond

// report requests a report and polls its job until it succeeded: a build's latency is the
// time from the request to the client seeing it done.
func (c *client) report(f *scaleFixtures) workload {
	return func(ctx context.Context, _, _ int) error {
		ctx, cancel := context.WithTimeout(ctx, reportTimeout)
		defer cancel()
		r, err := c.expect(ctx, http.StatusAccepted, http.MethodPost, "/reports", f.reportBody,
			map[string]string{"Idempotency-Key": c.key("report")})
		for err == nil {
			var job struct{ ID, Status string }
			if err = json.Unmarshal(r.body, &job); err != nil {
				return err
			}
			switch job.Status {
			case "succeeded":
				return nil
			case "failed", "canceled":
				return fmt.Errorf("report job %s %s: %.200s", job.ID, job.Status, r.body)
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("report job %s: %w", job.ID, ctx.Err())
			case <-time.After(reportPoll):
			}
			r, err = c.expect(ctx, http.StatusOK, http.MethodGet, "/jobs/"+job.ID, "", nil)
		}
		return err
	}
}

// scaleResult is one operation at one size.
type scaleResult struct {
	op   string
	rows int
	sample
}

// runScale sets every server up, measures every operation on each in turn and prints the
// table; the chart is written when cfg.SVG is set.
func runScale(ctx context.Context, cfg config, out io.Writer) ([]scaleResult, error) {
	clients := make([]*client, len(cfg.Scale))
	fixtures := make([]*scaleFixtures, len(cfg.Scale))
	for i, s := range cfg.Scale {
		clients[i] = newClient(s.url, cfg.APIKey, cfg.Concurrency)
		defer clients[i].http.CloseIdleConnections()
		f, err := clients[i].scaleSetup(ctx, cfg.Concurrency)
		if err != nil {
			return nil, fmt.Errorf("setup %s: %w", s.url, err)
		}
		fixtures[i] = f
		if _, err := fmt.Fprintf(out, "%s: %d preloaded rows, deep page after row %d\n", s.url, s.rows, f.depth); err != nil {
			return nil, err
		}
	}
	results := make([]scaleResult, 0, len(scaleOps)*len(cfg.Scale))
	for _, op := range scaleOps {
		if _, err := fmt.Fprintf(out, "running %s...\n", op.name); err != nil {
			return nil, err
		}
		row := make([]scaleResult, len(cfg.Scale))
		loads := make([]workload, len(cfg.Scale))
		for i, s := range cfg.Scale {
			row[i] = scaleResult{op: op.name, rows: s.rows}
			loads[i] = op.workload(clients[i], fixtures[i])
		}
		slice := cfg.Duration / time.Duration(cfg.Slices)
		for n := range cfg.Slices {
			for k := range cfg.Scale {
				i := (n + k) % len(cfg.Scale) // each slice starts with another size
				row[i].merge(runSlice(ctx, cfg.Concurrency, slice, cfg.MaxPerWorker, loads[i]))
			}
		}
		for i := range row {
			slices.Sort(row[i].latencies)
		}
		results = append(results, row...)
		if ctx.Err() != nil {
			return results, ctx.Err()
		}
	}
	if err := reportScale(out, cfg.Scale, results); err != nil {
		return results, err
	}
	if cfg.SVG == "" {
		return results, nil
	}
	if err := writeScaleChart(cfg.SVG, results, cfg); err != nil {
		return results, err
	}
	_, err := fmt.Fprintf(out, "chart: %s\n", cfg.SVG)
	return results, err
}

// reportScale prints a row per operation: p50 and p99 at each size, and the p50 at the
// largest size over the p50 at the smallest.
func reportScale(out io.Writer, servers []scaleServer, results []scaleResult) error {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	table := &textout.Printer{W: tw}
	table.Printf("operation\t")
	for _, s := range servers {
		table.Printf("p50 @%s\tp99 @%s\t", fmtRows(s.rows), fmtRows(s.rows))
	}
	table.Printf("p50 %s/%s\terrors\t\n", fmtRows(servers[len(servers)-1].rows), fmtRows(servers[0].rows))
	var firstErrs []string
	for i := 0; i < len(results); i += len(servers) {
		row := results[i : i+len(servers)]
		table.Printf("%s\t", row[0].op)
		errs := 0
		for _, r := range row {
			table.Printf("%s\t%s\t", fmtMillis(r.p50()), fmtMillis(percentile(r.latencies, 0.99)))
			errs += r.errors
			if r.firstErr != nil {
				firstErrs = append(firstErrs, fmt.Sprintf("%s @%s: first error: %v", r.op, fmtRows(r.rows), r.firstErr))
			}
		}
		table.Printf("%s\t%d\t\n", fmtRatio(float64(row[len(row)-1].p50()), float64(row[0].p50())), errs)
	}
	if err := textout.FlushTable(table, tw); err != nil {
		return err
	}
	p := &textout.Printer{W: out}
	for _, e := range firstErrs {
		p.Printf("%s\n", e)
	}
	return p.Err
}

func (r scaleResult) p50() time.Duration { return percentile(r.latencies, 0.50) }

// fmtRows is a row count as the chart labels it: 0, 100k, 1M.
func fmtRows(n int) string {
	switch {
	case n >= 1_000_000 && n%1_000_000 == 0:
		return strconv.Itoa(n/1_000_000) + "M"
	case n >= 1000 && n%1000 == 0:
		return strconv.Itoa(n/1000) + "k"
	}
	return strconv.Itoa(n)
}
