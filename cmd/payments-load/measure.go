package main

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// scenario is one kind of load and the baseline it is compared with ("" for none).
type scenario struct {
	name     string
	baseline string
	workload func(c *client, f *fixtures) workload
}

// raceScenario is measured in rounds of simultaneous requests rather than by clients.
const raceScenario = "race"

var scenarios = []scenario{
	{"create", baselineCreate, func(c *client, _ *fixtures) workload { return c.create }},
	{"replay", baselineCreate, (*client).replay},
	{"get", baselineGet, (*client).get},
	{"get-304", baselineGet, (*client).getNotModified},
	{"list", baselineGet, func(c *client, _ *fixtures) workload { return c.list }},
	{"refund", baselineCreate, (*client).refund},
	{raceScenario, "", nil},
	{"mixed", "", (*client).mixed},
}

func scenarioIndex(name string) int {
	return slices.IndexFunc(scenarios, func(s scenario) bool { return s.name == name })
}

func scenarioNames() []string {
	names := make([]string, len(scenarios))
	for i, s := range scenarios {
		names[i] = s.name
	}
	return names
}

// result is one row of the report.
type result struct {
	name string
	sample
	baseline     string
	baselineRate float64 // requests per second of the baseline over its slices
	ratio        float64 // median of the slices' scenario/baseline ratios; 0 without a baseline
	note         string
	floor        comparison  // against the minimal server (floor.go)
	stripeMock   comparison  // against stripe-mock (stripemock.go)
	cluster      comparison  // through the cluster, its ratio cluster/direct (cluster.go)
	cost         costFigures // CPU and system calls per request, on our server and the floor (cost.go)
	tiers        tierCosts   // CPU per request of each of -tiers, direct and through the cluster (tiers.go)
}

// p returns a latency percentile of the scenario's successful requests.
func (r result) p(q float64) time.Duration { return percentile(r.latencies, q) }

// measure runs one scenario for cfg.Duration in cfg.Slices slices, each followed by a
// slice of its baseline of the same length (A/B/A/B), and one against each other server
// that answers the scenario, the minimal server, stripe-mock and the cluster
// (A/B/C/D/E/A/B/C/D/E), so drift of a shared machine affects both sides of each slice's
// ratio alike. The meters read what our server, the minimal server and PostgreSQL spent in
// their slices, and each of -tiers in ours and the cluster's.
func measure(ctx context.Context, cfg config, c *client, f *fixtures, base *baselines, o others, m costMeters, name string) result {
	s := scenarios[scenarioIndex(name)]
	if s.name == raceScenario {
		return measureRace(ctx, cfg, c)
	}
	w := s.workload(c, f)
	slice := cfg.Duration / time.Duration(cfg.Slices)
	res := result{name: s.name}
	var own, theirs []sample
	atFloor := otherSlices{work: o.floor.workload(s.name), meter: m.floor, cost: &res.cost.floor}
	atMock := otherSlices{work: o.stripeMock.workload(s.name)}
	atCluster := otherSlices{work: o.cluster.workload(s.name), tiers: m.tiers, tierCost: &res.tiers.cluster}
	for range cfg.Slices {
		a := m.tiers.around(&res.tiers.direct, func() sample {
			return m.own.runSlice(ctx, &res.cost.own, cfg.Concurrency, slice, cfg.MaxPerWorker, w)
		})
		own = append(own, a)
		res.merge(a)
		if base != nil && s.baseline != "" {
			theirs = append(theirs, runSlice(ctx, cfg.Concurrency, slice, cfg.MaxPerWorker, base.workload(s.baseline)))
		}
		for _, other := range []*otherSlices{&atFloor, &atMock, &atCluster} {
			other.run(ctx, cfg, slice)
		}
	}
	// Zeros for a server not run.
	res.floor = compare(own, atFloor.samples, "minimal server")
	res.stripeMock = compare(own, atMock.samples, "stripe-mock")
	res.cluster = compareCluster(own, atCluster.samples)
	slices.Sort(res.latencies)
	if len(theirs) > 0 {
		res.baseline = s.baseline
		res.baselineRate, res.ratio, res.note = compareSlices(own, theirs, "baseline")
	}
	return res
}

func measureRace(ctx context.Context, cfg config, c *client) result {
	maxRounds := max(cfg.MaxPerWorker/cfg.RaceSize, 1)
	r := c.race(ctx, cfg.RaceSize, cfg.Duration, maxRounds)
	slices.Sort(r.latencies)
	return result{
		name:   raceScenario,
		sample: r.sample,
		note: fmt.Sprintf("%d rounds of %d, %d charges; latencies are the %d answers 409",
			r.rounds, cfg.RaceSize, r.charges, len(r.latencies)),
	}
}

// fmtRate and fmtMillis keep the table's numbers short.
func fmtRate(perSecond float64) string { return strconv.FormatFloat(perSecond, 'f', 0, 64) }

func fmtMillis(d time.Duration) string {
	return strings.TrimSuffix(strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 2, 64), ".00") + " ms"
}
