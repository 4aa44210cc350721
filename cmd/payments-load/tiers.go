package main

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/payments-api/payments-api/internal/textout"
	"github.com/prometheus/procfs"
)

// Where the cluster path's CPU goes. -tiers names the processes a request may cross or set
// to work, each by a port it listens on (scripts/perf-cluster: the direct server, HAProxy,
// the cluster's API process, PgBouncer, Redis, PostgreSQL, and the cluster's job workers by
// the ports of their /metrics). Around every slice, direct and through the cluster, the tool
// reads what each of them has spent, so each path's cost per request is split by tier. Every
// tier is read on both paths: one a path does not cross (HAProxy on the direct path) shows
// what it spends idle, its health checks, and nothing is assumed.

// tier is one process of -tiers, or several: those sharing a port (HAProxy's master and
// worker), and those listening on each of several ports (the cluster's job workers, each on
// the port of its /metrics), summed.
type tier struct {
	name  string
	ports []uint64
}

// parseTiers reads -tiers: a comma-separated list of name=port, or name=port+port+... for a
// tier of processes on several ports, each name once.
func parseTiers(s string) ([]tier, error) {
	var tiers []tier
	for part := range strings.SplitSeq(s, ",") {
		name, list, _ := strings.Cut(part, "=")
		var ports []uint64
		for p := range strings.SplitSeq(list, "+") {
			port, err := strconv.ParseUint(p, 10, 16)
			if err != nil || port == 0 || slices.Contains(ports, port) {
				ports = nil
				break
			}
			ports = append(ports, port)
		}
		if name == "" || ports == nil {
			return nil, fmt.Errorf("-tiers %q: want a comma-separated list of name=port or name=port+port", part)
		}
		if slices.ContainsFunc(tiers, func(t tier) bool { return t.name == name }) {
			return nil, fmt.Errorf("-tiers: %q twice", name)
		}
		tiers = append(tiers, tier{name: name, ports: ports})
	}
	return tiers, nil
}

// tierMeter reads what every tier has spent. A nil tierMeter reads nothing.
type tierMeter struct {
	names []string
	read  []func() (spent, error) // one per tier
}

// newTierMeter finds each tier's processes. A tier that cannot be found is read as an error,
// which the report names; the others are still measured.
func newTierMeter(r procReader, tiers []tier) *tierMeter {
	if len(tiers) == 0 {
		return nil
	}
	m := &tierMeter{}
	for _, t := range tiers {
		m.names = append(m.names, t.name)
		m.read = append(m.read, r.tierReader(t.ports...))
	}
	return m
}

// tierReader is how to read the processes listening on ports. PostgreSQL's listening
// process is its postmaster, which does none of the queries' work: that tier is read as the
// postmaster and every process it started (pgCounter).
func (r procReader) tierReader(ports ...uint64) func() (spent, error) {
	var pids []int
	for _, port := range ports {
		held, err := r.listeners(port)
		if err != nil {
			return func() (spent, error) { return spent{}, err }
		}
		for _, pid := range held {
			if !slices.Contains(pids, pid) { // one process may listen on two of them
				pids = append(pids, pid)
			}
		}
	}
	if postmaster, ok := r.postmasterAmong(pids); ok {
		return newPGCounter(r, postmaster).spent
	}
	return func() (spent, error) { return r.serverSpent(pids) }
}

// postmasterAmong finds PostgreSQL's postmaster among the processes holding a listening
// socket, if they are PostgreSQL's. A backend the postmaster has just forked holds a copy
// of the socket until it closes it, so on a busy server the socket can have two holders for
// a moment, and the backend may be gone a moment later: the postmaster is the holder whose
// parent is not one of them, and a holder already gone is left out.
func (r procReader) postmasterAmong(pids []int) (int, bool) {
	parents := map[int]int{}
	for _, pid := range pids {
		p, err := r.fs.Proc(pid)
		if err != nil {
			continue // gone since the listing
		}
		st, err := p.Stat()
		if err != nil {
			continue
		}
		if !isPostgresComm(st) {
			return 0, false
		}
		parents[pid] = st.PPID
	}
	var roots []int
	for pid, parent := range parents {
		if _, forked := parents[parent]; !forked {
			roots = append(roots, pid)
		}
	}
	if len(roots) != 1 {
		return 0, false
	}
	return roots[0], true
}

func isPostgresComm(st procfs.ProcStat) bool { return st.Comm == "postgres" || st.Comm == "postmaster" }

// reading is one tier's total at one moment.
type reading struct {
	spent spent
	err   error
}

func (m *tierMeter) readAll() []reading {
	out := make([]reading, len(m.read))
	for i, read := range m.read {
		out[i].spent, out[i].err = read()
	}
	return out
}

// around runs a slice between two readings of every tier and adds what each spent to into.
func (m *tierMeter) around(into *tierCost, slice func() sample) sample {
	if m == nil {
		return slice()
	}
	before := m.readAll()
	s := slice()
	after := m.readAll()
	if into.spent == nil {
		into.spent, into.errs = make([]spent, len(m.names)), make([]error, len(m.names))
	}
	into.requests += s.requests
	for i := range after {
		into.spent[i] = into.spent[i].plus(after[i].spent.since(before[i].spent))
		into.errs[i] = cmp.Or(into.errs[i], before[i].err, after[i].err)
	}
	return s
}

// tierCost is what every tier spent over one path's slices of a scenario.
type tierCost struct {
	requests int
	spent    []spent // by tier, in -tiers' order
	errs     []error // why a tier has no figure
}

// tierCosts are a scenario's tier costs on the direct path and through the cluster.
type tierCosts struct {
	direct, cluster tierCost
}

// cpuPerRequest is a tier's CPU per request in microseconds; false when it was not
// measured.
func (c tierCost) cpuPerRequest(i int) (float64, bool) {
	if c.requests == 0 || i >= len(c.spent) || c.errs[i] != nil {
		return 0, false
	}
	return c.spent[i].cpu.Seconds() * 1e6 / float64(c.requests), true
}

// reportTiers prints, for every scenario measured through the cluster, each tier's CPU per
// request on both paths and their sums, then why any tier has no figure.
func reportTiers(out io.Writer, names []string, results []result) error {
	measured := slices.DeleteFunc(slices.Clone(results), func(r result) bool { return r.cluster.rate == 0 })
	if len(names) == 0 || len(measured) == 0 {
		return nil
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	table := &textout.Printer{W: tw}
	table.Printf("scenario\ttier\tdirect cpu µs/req\tcluster cpu µs/req\t\n")
	var whyNot []string
	for _, r := range measured {
		paths := [2]tierCost{r.tiers.direct, r.tiers.cluster}
		var sums [2]float64
		whole := [2]bool{true, true} // every tier of the path measured, so its sum is too
		for i, name := range names {
			cells := [2]string{"-", "-"}
			for side, c := range paths {
				v, ok := c.cpuPerRequest(i)
				sums[side], whole[side] = sums[side]+v, whole[side] && ok
				if ok {
					cells[side] = strconv.FormatFloat(v, 'f', 0, 64)
				} else if i < len(c.errs) && c.errs[i] != nil {
					if line := fmt.Sprintf("tier %s not measured: %v", name, c.errs[i]); !slices.Contains(whyNot, line) {
						whyNot = append(whyNot, line)
					}
				}
			}
			table.Printf("%s\t%s\t%s\t%s\t\n", r.name, name, cells[0], cells[1])
		}
		all := [2]string{"-", "-"}
		for side := range all {
			if whole[side] {
				all[side] = strconv.FormatFloat(sums[side], 'f', 0, 64)
			}
		}
		table.Printf("%s\tall tiers\t%s\t%s\t\n", r.name, all[0], all[1])
	}
	if err := textout.FlushTable(table, tw); err != nil {
		return err
	}
	p := &textout.Printer{W: out}
	for _, line := range whyNot {
		p.Printf("%s\n", line)
	}
	return p.Err
}
