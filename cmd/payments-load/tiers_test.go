package main

import (
	"cmp"
	"errors"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestParseTiers(t *testing.T) {
	got, err := parseTiers("haproxy=8280,workers=9291+9292,postgresql=5432")
	want := []tier{{"haproxy", []uint64{8280}}, {"workers", []uint64{9291, 9292}}, {"postgresql", []uint64{5432}}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("parseTiers: %+v, %v; want %+v", got, err, want)
	}
	for _, bad := range []string{"haproxy", "haproxy=", "=8280", "haproxy=0", "haproxy=70000", "a=1,a=2", "a=1,",
		"a=1+", "a=+1", "a=1+1", "a=1+0", "a=1+x"} {
		if _, err := parseTiers(bad); err == nil {
			t.Errorf("parseTiers(%q): no error", bad)
		}
	}
	if _, err := parseFlags([]string{"-tiers", "haproxy=8280"}); err == nil || !strings.Contains(err.Error(), "-cluster-url") {
		t.Errorf("-tiers without -cluster-url: %v, want an error naming -cluster-url", err)
	}
}

// TestReportTiers: each tier's CPU per request on both paths, their sums, and a "-" (and
// why) where a tier was not measured, which leaves that path without a sum.
func TestReportTiers(t *testing.T) {
	ms := func(n int) spent { return spent{cpu: time.Duration(n) * time.Millisecond} }
	r := result{name: "get", cluster: comparison{rate: 500}, tiers: tierCosts{
		direct:  tierCost{requests: 1000, spent: []spent{ms(100), ms(0), ms(40)}, errs: []error{nil, nil, nil}},
		cluster: tierCost{requests: 500, spent: []spent{ms(70), {}, ms(50)}, errs: []error{nil, errors.New("no socket listens on port 6632"), nil}},
	}}
	var out strings.Builder
	if err := reportTiers(&out, []string{"api", "pgbouncer", "postgresql"}, []result{r, {name: "list"}}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(out.String(), "\n")
	for i, want := range []string{
		"scenario tier direct cpu µs/req cluster cpu µs/req",
		"get api 100 140",
		"get pgbouncer 0 -",
		"get postgresql 40 100",
		"get all tiers 140 -",
		"tier pgbouncer not measured: no socket listens on port 6632",
	} {
		if i >= len(lines) || strings.Join(strings.Fields(lines[i]), " ") != want {
			t.Errorf("line %d: want %q in\n%s", i, want, out.String())
		}
	}
	if strings.Contains(out.String(), " list ") {
		t.Errorf("a scenario not run through the cluster is reported:\n%s", out.String())
	}
}

// TestTiersAreMeasuredAroundEachSlice runs get and create against a server in this process,
// which stands in for the cluster too, with two tiers: the server, found from its port, and
// PostgreSQL, found from its own (the postmaster, counted with its backends). Both are read
// around the direct and the cluster slices alike; a tier nothing listens on is named as not
// measured.
func TestTiersAreMeasuredAroundEachSlice(t *testing.T) {
	baseURL, databaseURL := startServer(t)
	free, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	freePort := free.Addr().(*net.TCPAddr).Port
	_ = free.Close() // nothing listens on it now
	results, out := runShort(t, config{
		URL: baseURL, APIKey: smokeKey, ClusterURL: baseURL, Scenarios: []string{"get", "create"},
		Tiers: []tier{{"server", []uint64{mustPort(t, baseURL)}}, {"postgresql", []uint64{mustPort(t, databaseURL)}}, {"none", []uint64{uint64(freePort)}}},
	})
	// PostgreSQL's CPU moves in clock ticks of 10 ms, more than the few hundred GETs of a
	// 150 ms slice may cost it: its figure must be there for every slice, and above zero
	// over each path's two scenarios.
	pg := map[string]float64{}
	for _, r := range results {
		for side, c := range map[string]tierCost{"direct": r.tiers.direct, "cluster": r.tiers.cluster} {
			if v, ok := c.cpuPerRequest(0); !ok || v <= 0 {
				t.Errorf("%s, %s path, tier server: %v %v (%v), want a figure", r.name, side, v, ok, c.errs)
			}
			v, ok := c.cpuPerRequest(1)
			if !ok {
				t.Errorf("%s, %s path, tier postgresql: not measured (%v)", r.name, side, c.errs)
			}
			pg[side] += v
			if _, ok := c.cpuPerRequest(2); ok {
				t.Errorf("%s, %s path: a figure for a port nothing listens on", r.name, side)
			}
		}
	}
	for _, side := range []string{"direct", "cluster"} {
		if pg[side] <= 0 {
			t.Errorf("%s path: PostgreSQL spent nothing over get and create", side)
		}
	}
	for _, want := range []string{"get postgresql", "create all tiers -", "tier none not measured: no socket listens on port " + strconv.Itoa(freePort)} {
		if !strings.Contains(strings.Join(strings.Fields(out), " "), want) {
			t.Errorf("want %q in\n%s", want, out)
		}
	}
}

func mustPort(t *testing.T, rawURL string) uint64 {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	port, err := strconv.ParseUint(cmp.Or(u.Port(), "5432"), 10, 16)
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// TestTierReaderFindsThePostmasterBesideAForkedBackend: on a busy PostgreSQL, a backend
// just forked still holds the listening socket beside the postmaster. The tier is still read
// as the postmaster and its children, even once that backend has gone; two processes of
// another program holding one socket (a master and its worker) are still summed, and so are
// the processes listening on each port of a tier of several, each counted once.
func TestTierReaderFindsThePostmasterBesideAForkedBackend(t *testing.T) {
	f := newFakeProc(t)
	f.write("net/tcp", tcpHeader+
		tcpLine(0, "0100007F:1538", "00000000:0000", "0A", 2001)+ // 127.0.0.1:5432
		tcpLine(1, "0100007F:1F90", "00000000:0000", "0A", 2002)+ // 127.0.0.1:8080
		tcpLine(2, "0100007F:244C", "00000000:0000", "0A", 2003)+ // 127.0.0.1:9292
		tcpLine(3, "0100007F:244D", "00000000:0000", "0A", 2004)) // 127.0.0.1:9293
	f.process(500, "postgres", 1, cpuTicks{utime: 10, stime: 5, cutime: 100, cstime: 50}, "socket:[2001]")
	f.process(501, "postgres", 500, cpuTicks{utime: 20, stime: 10}, "socket:[2001]") // forked, not yet closed it
	f.process(700, "haproxy", 1, cpuTicks{utime: 1}, "socket:[2002]")
	f.io(700, 0, 0)
	f.process(701, "haproxy", 700, cpuTicks{utime: 2}, "socket:[2002]")
	f.io(701, 0, 0)
	f.process(800, "payments-api", 1, cpuTicks{utime: 4}, "socket:[2003]")
	f.io(800, 0, 0)
	f.process(801, "payments-api", 1, cpuTicks{utime: 5, stime: 1}, "socket:[2004]")
	f.io(801, 0, 0)
	r := f.reader()

	pg := r.tierReader(5432)
	if err := os.RemoveAll(filepath.Join(f.root, "501")); err != nil { // the backend exits
		t.Fatal(err)
	}
	if got, err := pg(); err != nil || got.cpu != 1650*time.Millisecond {
		t.Errorf("postgresql tier = %v, %v; want the postmaster's 1.65s with its children's", got.cpu, err)
	}
	if got, err := r.tierReader(8080)(); err != nil || got.cpu != 30*time.Millisecond {
		t.Errorf("haproxy tier = %v, %v; want both processes' 30ms", got.cpu, err)
	}
	if got, err := r.tierReader(9292, 9293)(); err != nil || got.cpu != 100*time.Millisecond {
		t.Errorf("workers tier = %v, %v; want the 40ms and 60ms of the two ports' processes", got.cpu, err)
	}
	if got, err := r.tierReader(9292, 8080, 9292)(); err != nil || got.cpu != 70*time.Millisecond {
		t.Errorf("tier of 9292, 8080 and 9292 again = %v, %v; want 70ms, each process once", got.cpu, err)
	}
	if _, err := r.tierReader(9292, 9294)(); err == nil || !strings.Contains(err.Error(), "9294") {
		t.Errorf("tier with a port nothing listens on: %v, want an error naming it", err)
	}
}
