package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/payments-api/payments-api/internal/textout"
)

// report prints one row per scenario, then the cluster's figures and its tiers (named
// tiers), the cost per request, the notes, the ratios the targets in docs/performance.md
// are stated in, and the server's memory.
func report(out io.Writer, results []result, tiers []string, rssBytes float64) error {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	table := &textout.Printer{W: tw}
	table.Printf("scenario\treq/s\tp50\tp95\tp99\terrors\tbaseline\tbaseline req/s\tratio\tminimal req/s\tratio vs minimal\tstripe-mock req/s\tratio vs stripe-mock\t\n")
	for _, r := range results {
		base, baseRate, ratio := "-", "-", "-"
		if r.baseline != "" {
			base, baseRate, ratio = r.baseline, fmtRate(r.baselineRate), strconv.FormatFloat(r.ratio, 'f', 2, 64)
		}
		table.Printf("%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t\n", r.name, fmtRate(r.rate()),
			fmtMillis(r.p(0.50)), fmtMillis(r.p(0.95)), fmtMillis(r.p(0.99)), r.errors, base, baseRate, ratio,
			fmtComparison(r.floor), fmtComparison(r.stripeMock))
	}
	if err := textout.FlushTable(table, tw); err != nil {
		return err
	}
	p := &textout.Printer{W: out}
	reportCluster(p, results)
	if p.Err != nil {
		return p.Err
	}
	if err := reportTiers(out, tiers, results); err != nil {
		return err
	}
	if err := reportCosts(out, results); err != nil {
		return err
	}
	for _, r := range results {
		for _, note := range []string{r.note, r.floor.note, r.stripeMock.note} {
			if note != "" {
				p.Printf("%s: %s\n", r.name, note)
			}
		}
		if r.firstErr != nil {
			p.Printf("%s: first error: %v\n", r.name, r.firstErr)
		}
	}
	rate := map[string]float64{}
	for _, r := range results {
		rate[r.name] = r.rate()
	}
	if rate["create"] > 0 && rate["replay"] > 0 {
		p.Printf("replay / create: %.2f\n", rate["replay"]/rate["create"])
	}
	if rate["get"] > 0 && rate["get-304"] > 0 {
		p.Printf("get-304 / get: %.2f\n", rate["get-304"]/rate["get"])
	}
	if rssBytes > 0 {
		p.Printf("server RSS: %.0f MiB\n", rssBytes/(1<<20))
	}
	return p.Err
}

// fmtComparison is the rate and ratio columns of another server, "-" where it was not run.
func fmtComparison(c comparison) string {
	if c.rate == 0 {
		return "-\t-"
	}
	return fmtRate(c.rate) + "\t" + strconv.FormatFloat(c.ratio, 'f', 2, 64)
}

// serverRSS reads the server's resident memory from its /metrics, or 0 when it cannot.
func serverRSS(ctx context.Context, c *client) float64 {
	r, err := c.do(ctx, http.MethodGet, "/metrics", "", nil)
	if err != nil || r.status != http.StatusOK {
		return 0
	}
	sc := bufio.NewScanner(strings.NewReader(string(r.body)))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "process_resident_memory_bytes "); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return f
		}
	}
	return 0
}
