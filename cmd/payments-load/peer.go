package main

import (
	"context"
	"fmt"
	"time"
)

// A peer is another server that answers the scenarios' own requests on the server's
// database, so the same workloads run against it with the same fixtures: the minimal server
// (the floor, floor.go) or the server itself through HAProxy and PgBouncer (the cluster,
// cluster.go).
type peer struct {
	c         *client
	f         *fixtures       // the server's fixtures, read through the peer
	scenarios map[string]bool // the scenarios measured against it
}

// newPeer is the peer at url, measured on scenarios, or nil when url is empty.
func newPeer(url, apiKey string, conns int, f *fixtures, scenarios map[string]bool) *peer {
	if url == "" {
		return nil
	}
	return &peer{c: newClient(url, apiKey, conns), f: f, scenarios: scenarios}
}

// workload is the scenario's workload sent to the peer, or nil when it is not measured there.
func (p *peer) workload(name string) workload {
	if p == nil || !p.scenarios[name] {
		return nil
	}
	return scenarios[scenarioIndex(name)].workload(p.c, p.f)
}

// close drops the peer client's idle connections.
func (p *peer) close() {
	if p != nil {
		p.c.http.CloseIdleConnections()
	}
}

// others are the servers measured beside ours in the slices of a scenario; a nil one is not.
type others struct {
	floor, cluster *peer
	stripeMock     *stripeMock
}

func (o others) close() {
	o.floor.close()
	o.cluster.close()
	o.stripeMock.close()
}

// otherSlices are one other server's slices of a scenario, run in turn with ours.
type otherSlices struct {
	work     workload // nil: the server does not answer the scenario, and is not run
	meter    *meter   // nil: what it spends is not read
	cost     *cost
	tiers    *tierMeter // nil: no tiers are read around its slices
	tierCost *tierCost
	samples  []sample
}

func (o *otherSlices) run(ctx context.Context, cfg config, d time.Duration) {
	if o.work == nil {
		return
	}
	s := o.tiers.around(o.tierCost, func() sample {
		return o.meter.runSlice(ctx, o.cost, cfg.Concurrency, d, cfg.MaxPerWorker, o.work)
	})
	o.samples = append(o.samples, s)
}

// comparison is a scenario's figures against another server run in the same slices.
type comparison struct {
	rate  float64 // requests per second of the other server over its slices; 0 when not run
	ratio float64 // median of the slices' scenario/other ratios
	note  string  // the other server's errors
}

func compare(own, other []sample, what string) comparison {
	rate, ratio, note := compareSlices(own, other, what)
	return comparison{rate: rate, ratio: ratio, note: note}
}

// compareSlices pairs a scenario's slices with another side's, run in turn with them: the
// other side's rate over its slices, the median of the slices' ratios, and a note naming the
// other side (what) when it had errors.
func compareSlices(own, other []sample, what string) (rate, ratio float64, note string) {
	var total sample
	for _, s := range other {
		total.merge(s)
	}
	if total.errors > 0 {
		note = fmt.Sprintf("%s errors: %d (%v)", what, total.errors, total.firstErr)
	}
	return total.rate(), median(sliceRatios(own, other)), note
}
