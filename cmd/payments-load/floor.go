package main

import "fmt"

// The floor is cmd/payments-load/minimal: echo and pgx sending the server's own SQL, with
// nothing of ours in between. Run beside the server (-minimal-url), the scenarios it serves
// are measured against it in the same alternating slices as the SQL baselines, and the
// ratio says what share of the bare stack's rate the whole server keeps.
type floor struct {
	c *client
	f *fixtures // the server's fixtures: the minimal server reads the same database
}

// floorScenarios are the scenarios the minimal server answers as the server does.
var floorScenarios = map[string]bool{"get": true, "create": true}

// newFloor is the floor at url, or nil when url is empty.
func newFloor(url, apiKey string, conns int, f *fixtures) *floor {
	if url == "" {
		return nil
	}
	return &floor{c: newClient(url, apiKey, conns), f: f}
}

// workload is the scenario's workload sent to the minimal server, or nil when it has none.
func (fl *floor) workload(name string) workload {
	if fl == nil || !floorScenarios[name] {
		return nil
	}
	return scenarios[scenarioIndex(name)].workload(fl.c, fl.f)
}

// close drops the floor client's idle connections.
func (fl *floor) close() {
	if fl != nil {
		fl.c.http.CloseIdleConnections()
	}
}

// floorFigures are a scenario's figures against the floor.
type floorFigures struct {
	floorRate  float64 // requests per second of the minimal server over its slices
	floorRatio float64 // median of the slices' scenario/minimal ratios; 0 without a floor
	floorNote  string
}

func compareToFloor(own, atFloor []sample) floorFigures {
	if len(atFloor) == 0 {
		return floorFigures{}
	}
	rate, ratio, note := compareSlices(own, atFloor, "minimal server")
	return floorFigures{floorRate: rate, floorRatio: ratio, floorNote: note}
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
