package main

import "github.com/payments-api/payments-api/internal/textout"

// The cluster path is the server reached through HAProxy and PgBouncer (deploy/cluster/run
// with API_PROCESSES=1) on the database of -url, the same server reached directly. Run
// beside it (-cluster-url), get and create are measured through the cluster in the same
// alternating slices, and the ratio says what share of the direct rate the two hops and
// the pooler's query mode leave. It is a peer (peer.go): the fixtures made through -url are
// read through the cluster.

// clusterScenarios are the scenarios measured through the cluster.
var clusterScenarios = map[string]bool{"get": true, "create": true}

// compareCluster is the cluster's figures. Its ratio is the other way round from the
// floor's, cluster/direct: the share of the direct rate the cluster path keeps, as its
// targets are stated.
func compareCluster(direct, atCluster []sample) comparison {
	c := compare(direct, atCluster, "cluster")
	c.ratio = median(sliceRatios(atCluster, direct))
	return c
}

// reportCluster prints a line per scenario measured through the cluster, under the scenario
// table rather than in it (scripts/perf counts the table's columns): both rates, the ratio
// and the cluster's errors.
func reportCluster(p *textout.Printer, results []result) {
	for _, r := range results {
		if r.cluster.rate == 0 {
			continue
		}
		p.Printf("%s: cluster %s req/s, direct %s req/s, cluster/direct %.2f", r.name,
			fmtRate(r.cluster.rate), fmtRate(r.rate()), r.cluster.ratio)
		if r.cluster.note != "" {
			p.Printf("; %s", r.cluster.note)
		}
		p.Printf("\n")
	}
}
