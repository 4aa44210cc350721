package main

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// TestClusterRatioIsClusterOverDirect: the cluster's ratio is the median of each slice's
// cluster rate over the direct rate just before it, and its errors are named on its line.
func TestClusterRatioIsClusterOverDirect(t *testing.T) {
	slices := func(requests ...int) []sample {
		var s []sample
		for _, n := range requests {
			s = append(s, sample{requests: n, elapsed: time.Second})
		}
		return s
	}
	atCluster := slices(50, 90, 30)
	atCluster[1].errors, atCluster[1].firstErr = 2, errors.New("status 503")
	c := compareCluster(slices(100, 100, 100), atCluster)
	if c.ratio != 0.5 || c.rate != float64(50+90+30)/3 || c.note != "cluster errors: 2 (status 503)" {
		t.Errorf("cluster figures %+v, want ratio 0.5, rate %v and its errors", c, float64(50+90+30)/3)
	}
	var out strings.Builder
	if err := report(&out, []result{{name: "get", sample: slices(300)[0], cluster: c}}, nil, 0); err != nil {
		t.Fatal(err)
	}
	if want := "get: cluster 57 req/s, direct 300 req/s, cluster/direct 0.50; cluster errors: 2 (status 503)\n"; !strings.Contains(out.String(), want) {
		t.Errorf("report:\n%s\nwant the line %q", out.String(), want)
	}
}
