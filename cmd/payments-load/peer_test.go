package main

import (
	"regexp"
	"strings"
	"testing"
)

// TestPeersAreMeasuredInTheSameSlices runs get, create and list with a floor and a cluster.
// The server stands in for both here (the plumbing is what is tested): get and create get
// each one's rate and ratio, the floor's in its columns and the cluster's in a line under
// the table, which keeps its columns; list, measured against neither, gets none.
func TestPeersAreMeasuredInTheSameSlices(t *testing.T) {
	baseURL, databaseURL := startServer(t)
	results, out := runShort(t, config{
		URL: baseURL, APIKey: smokeKey, DatabaseURL: databaseURL, MinimalURL: baseURL, ClusterURL: baseURL,
		Scenarios: []string{"get", "create", "list"},
	})
	for _, r := range results {
		for _, p := range []struct {
			what      string
			figures   comparison
			scenarios map[string]bool
		}{{"floor", r.floor, floorScenarios}, {"cluster", r.cluster, clusterScenarios}} {
			measured := p.figures.rate > 0 && p.figures.ratio > 0 && p.figures.note == ""
			if measured != p.scenarios[r.name] {
				t.Errorf("%s: %s %+v", r.name, p.what, p.figures)
			}
		}
		line := regexp.MustCompile(`(?m)^` + r.name + `: cluster \d+ req/s, direct \d+ req/s, cluster/direct \d+\.\d\d$`)
		if line.MatchString(out) != clusterScenarios[r.name] {
			t.Errorf("%s: a cluster line %v in\n%s", r.name, !clusterScenarios[r.name], out)
		}
	}
	header := regexp.MustCompile(`(?m)^ *scenario .*$`).FindString(out)
	if !strings.Contains(header, "ratio vs minimal") || strings.Contains(header, "cluster") {
		t.Errorf("the table's header %q: want a floor column, and no cluster column", header)
	}
}
