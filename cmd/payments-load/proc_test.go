package main

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/procfs"
)

// fakeProc lays out files in a temporary directory as /proc does, for procfs to read.
type fakeProc struct {
	t    *testing.T
	root string
}

func newFakeProc(t *testing.T) fakeProc {
	t.Helper()
	return fakeProc{t: t, root: t.TempDir()}
}

func (f fakeProc) reader() procReader {
	f.t.Helper()
	fs, err := procfs.NewFS(f.root)
	if err != nil {
		f.t.Fatal(err)
	}
	return procReader{fs: fs, tick: 10 * time.Millisecond}
}

func (f fakeProc) write(path, text string) {
	f.t.Helper()
	path = filepath.Join(f.root, path)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		f.t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		f.t.Fatal(err)
	}
}

// A real line of /proc/PID/stat after "(comm) ", fields 3 to 52: a postmaster's.
const statTail = "S 1 2266 2266 0 -1 4194304 36019 3619286 0 20 13 145 27064 14361 20 0 1 0 4365 222543872 7642 " +
	"18446744073709551615 94560106299392 94560111755737 140734857379840 0 0 0 0 24129536 84487 1 0 0 17 1 0 0 0 0 0 " +
	"94560114235472 94560114453194 94561166475264 140734857387678 140734857387800 140734857387800 140734857387988 0"

// cpuTicks are fields 14 to 17 of /proc/PID/stat.
type cpuTicks struct{ utime, stime, cutime, cstime int }

// process writes pid's stat with its parent and CPU, and its open file descriptors: each a
// socket inode, or a file path.
func (f fakeProc) process(pid int, comm string, ppid int, cpu cpuTicks, fds ...string) {
	f.t.Helper()
	fields := strings.Fields(statTail)
	fields[4-3] = strconv.Itoa(ppid)
	for i, v := range []int{cpu.utime, cpu.stime, cpu.cutime, cpu.cstime} {
		fields[14-3+i] = strconv.Itoa(v)
	}
	f.write(fmt.Sprintf("%d/stat", pid), fmt.Sprintf("%d (%s) %s\n", pid, comm, strings.Join(fields, " ")))
	if err := os.MkdirAll(filepath.Join(f.root, strconv.Itoa(pid), "fd"), 0o755); err != nil {
		f.t.Fatal(err)
	}
	for i, target := range fds {
		if err := os.Symlink(target, filepath.Join(f.root, strconv.Itoa(pid), "fd", strconv.Itoa(i))); err != nil {
			f.t.Fatal(err)
		}
	}
}

// io writes pid's /proc/PID/io with its read and write system calls.
func (f fakeProc) io(pid int, syscr, syscw int) {
	f.write(fmt.Sprintf("%d/io", pid), fmt.Sprintf("rchar: 52361\nwchar: 9313\nsyscr: %d\nsyscw: %d\n"+
		"read_bytes: 0\nwrite_bytes: 4096\ncancelled_write_bytes: 0\n", syscr, syscw))
}

const tcpHeader = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"

func tcpLine(sl int, local, remote, state string, inode int) string {
	return fmt.Sprintf("%4d: %s %s %s 00000000:00000000 00:00000000 00000000     0        0 %d 1 0000000000000000 100 0 0 10 0\n",
		sl, local, remote, state, inode)
}

// TestListenersAreTheProcessesListeningOnThePortOnLoopback: of the sockets on port 18180
// (0x4704), only those listening (state 0A) at a loopback or unspecified address count,
// over IPv4 and IPv6, and every process holding one of them is found.
func TestListenersAreTheProcessesListeningOnThePortOnLoopback(t *testing.T) {
	f := newFakeProc(t)
	f.write("net/tcp", tcpHeader+
		tcpLine(0, "0100007F:4704", "00000000:0000", "0A", 1001)+ // 127.0.0.1:18180, listening
		tcpLine(1, "0100007F:4705", "00000000:0000", "0A", 1002)+ // another port
		tcpLine(2, "0500000A:4704", "00000000:0000", "0A", 1003)+ // 10.0.0.5:18180, not loopback
		tcpLine(3, "0100007F:4704", "0100007F:9C40", "01", 1004)+ // a connection, not a listener
		tcpLine(4, "0100007F:4706", "00000000:0000", "0A", 1006)) // 18182, held by no process
	f.write("net/tcp6", tcpHeader+
		tcpLine(0, "00000000000000000000000000000000:4704", "00000000000000000000000000000000:0000", "0A", 1005)) // [::]:18180
	f.process(100, "payments-api", 1, cpuTicks{}, "/dev/null", "socket:[1001]")
	f.process(101, "(odd) name", 100, cpuTicks{}, "socket:[1005]")
	f.process(200, "minimal", 1, cpuTicks{}, "socket:[1002]")
	f.process(300, "other", 1, cpuTicks{}, "socket:[1003]")
	f.process(400, "client", 1, cpuTicks{}, "socket:[1004]")
	r := f.reader()

	pids, err := r.listeners(18180)
	if err != nil || !slices.Equal(pids, []int{100, 101}) {
		t.Errorf("listeners(18180) = %v, %v; want [100 101]", pids, err)
	}
	if _, err := r.listeners(18183); err == nil || !strings.Contains(err.Error(), "no socket listens") {
		t.Errorf("listeners(18183): %v, want no socket", err)
	}
	if _, err := r.listeners(18182); err == nil || !strings.Contains(err.Error(), "held by no process") {
		t.Errorf("listeners(18182): %v, want held by no process", err)
	}
}

// TestServerSpentSumsItsProcesses reads utime + stime (fields 14 and 15, in ticks) and syscr
// and syscw of each process.
func TestServerSpentSumsItsProcesses(t *testing.T) {
	f := newFakeProc(t)
	f.process(100, "payments-api", 1, cpuTicks{utime: 150, stime: 50, cutime: 7, cstime: 7})
	f.io(100, 1000, 400)
	f.process(101, "(odd) name", 100, cpuTicks{utime: 1, stime: 1})
	f.io(101, 10, 5)
	r := f.reader()

	got, err := r.serverSpent([]int{100, 101})
	want := spent{cpu: 2020 * time.Millisecond, reads: 1010, writes: 405}
	if err != nil || got != want {
		t.Errorf("serverSpent = %+v, %v; want %+v", got, err, want)
	}
	if _, err := r.serverSpent([]int{100, 102}); err == nil {
		t.Error("serverSpent of a process that is gone: no error")
	}
}

// TestPGCounterCountsChildrenThatComeAndGo: PostgreSQL's CPU is the postmaster's and its
// children's, with the CPU of children they reaped; a child that exits moves into the
// postmaster's cutime and cstime and counts for what it spent since the last reading, and a
// new one adds its own.
func TestPGCounterCountsChildrenThatComeAndGo(t *testing.T) {
	f := newFakeProc(t)
	f.process(500, "postgres", 1, cpuTicks{utime: 10, stime: 5, cutime: 100, cstime: 50})
	f.process(501, "postgres", 500, cpuTicks{utime: 20, stime: 10, cutime: 1, cstime: 2}) // a backend
	f.process(502, "postgres", 500, cpuTicks{utime: 3, stime: 4})                         // an autovacuum worker
	f.process(600, "bash", 1, cpuTicks{utime: 1000, stime: 1000})                         // not PostgreSQL's
	pg := newPGCounter(f.reader(), 500)

	before, err := pg.spent()
	if want := 2050 * time.Millisecond; err != nil || before.cpu != want {
		t.Fatalf("spent = %v, %v; want %v", before.cpu, err, want)
	}

	// The autovacuum worker spends 2 ticks more, exits and is reaped; a new backend starts and
	// spends 4 ticks.
	if err := os.RemoveAll(filepath.Join(f.root, "502")); err != nil {
		t.Fatal(err)
	}
	f.process(500, "postgres", 1, cpuTicks{utime: 10, stime: 5, cutime: 105, cstime: 54})
	f.process(503, "postgres", 500, cpuTicks{utime: 4})
	after, err := pg.spent()
	if want := 60 * time.Millisecond; err != nil || after.since(before).cpu != want {
		t.Errorf("spent between = %v, %v; want %v", after.since(before).cpu, err, want)
	}
}

// TestPGCounterCountsAChildReapedWhileItReadsOnce: a backend read among the children and
// reaped before the postmaster is read is in that reading twice, as itself and in the
// postmaster's cutime. The next reading must still count what the others spent meanwhile,
// not come out lower than the first.
func TestPGCounterCountsAChildReapedWhileItReadsOnce(t *testing.T) {
	f := newFakeProc(t)
	f.process(500, "postgres", 1, cpuTicks{utime: 10, stime: 5, cutime: 130, cstime: 50}) // 501's 30 reaped
	f.process(501, "postgres", 500, cpuTicks{utime: 20, stime: 10})                       // and still listed
	f.process(502, "postgres", 500, cpuTicks{utime: 10})
	pg := newPGCounter(f.reader(), 500)
	before, err := pg.spent()
	if err != nil {
		t.Fatal(err)
	}

	if err := os.RemoveAll(filepath.Join(f.root, "501")); err != nil {
		t.Fatal(err)
	}
	f.process(502, "postgres", 500, cpuTicks{utime: 14}) // 4 ticks meanwhile
	after, err := pg.spent()
	if want := 40 * time.Millisecond; err != nil || after.since(before).cpu != want {
		t.Errorf("spent between = %v, %v; want %v", after.since(before).cpu, err, want)
	}
}

// TestPGCounterTakesAReusedPIDForANewProcess: a PID that reads less than before belongs to a
// process started since; the one before it is gone and was reaped.
func TestPGCounterTakesAReusedPIDForANewProcess(t *testing.T) {
	f := newFakeProc(t)
	f.process(500, "postgres", 1, cpuTicks{})
	f.process(501, "postgres", 500, cpuTicks{utime: 50})
	pg := newPGCounter(f.reader(), 500)
	before, err := pg.spent()
	if err != nil {
		t.Fatal(err)
	}
	f.process(500, "postgres", 1, cpuTicks{cutime: 52}) // the first 501 spent 2 more, then exited
	f.process(501, "postgres", 500, cpuTicks{utime: 3}) // a new process got its PID
	after, err := pg.spent()
	if want := 50 * time.Millisecond; err != nil || after.since(before).cpu != want {
		t.Errorf("spent between = %v, %v; want %v", after.since(before).cpu, err, want)
	}
}

func TestPostgresParentRefusesOtherProcesses(t *testing.T) {
	f := newFakeProc(t)
	f.process(500, "postgres", 1, cpuTicks{})
	f.process(501, "postgres", 500, cpuTicks{})
	f.process(600, "bash", 1, cpuTicks{})
	r := f.reader()
	if pid, err := r.postgresParent(501); err != nil || pid != 500 {
		t.Errorf("postgresParent(501) = %d, %v; want 500", pid, err)
	}
	for _, pid := range []int{600, 700} {
		if _, err := r.postgresParent(pid); err == nil {
			t.Errorf("postgresParent(%d): no error for a process that is not postgres", pid)
		}
	}
}

func TestSpentSinceNeverWrapsAround(t *testing.T) {
	later := spent{cpu: time.Second, reads: 5, writes: 5}
	earlier := spent{cpu: 2 * time.Second, reads: 3, writes: 7}
	if got, want := later.since(earlier), (spent{reads: 2}); got != want {
		t.Errorf("since = %+v, want %+v", got, want)
	}
}

// TestReadingThisProcess reads the test's own process in the real /proc: its CPU and system
// calls go up as it works, and the socket it listens on leads to it.
func TestReadingThisProcess(t *testing.T) {
	fs, err := procfs.NewDefaultFS()
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	r := procReader{fs: fs, tick: clockTick()}
	if r.tick != 10*time.Millisecond {
		t.Errorf("clock tick %v, want 10ms (USER_HZ is 100 on Linux)", r.tick)
	}
	self := []int{os.Getpid()}
	before, err := r.serverSpent(self)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(t.TempDir(), "f"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	after := before
	for deadline := time.Now().Add(5 * time.Second); after.cpu == before.cpu && time.Now().Before(deadline); {
		burn()
		if after, err = r.serverSpent(self); err != nil {
			t.Fatal(err)
		}
	}
	d := after.since(before)
	if d.cpu <= 0 || d.reads == 0 || d.writes == 0 {
		t.Errorf("spent while working: %+v, want CPU, reads and writes", d)
	}

	ln, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ln.Close() }()
	port := uint64(ln.Addr().(*net.TCPAddr).Port)
	if pids, err := r.listeners(port); err != nil || !slices.Equal(pids, self) {
		t.Errorf("listeners(%d) = %v, %v; want %v", port, pids, err, self)
	}
}

// burn spends about a millisecond of CPU, reading the clock.
func burn() {
	for start := time.Now(); time.Since(start) < time.Millisecond; {
	}
}

func TestURLPort(t *testing.T) {
	for _, tt := range []struct {
		url  string
		want uint64
	}{
		{"http://127.0.0.1:18180", 18180},
		{"http://localhost/", 80},
		{"https://[::1]", 443},
	} {
		if got, err := urlPort(tt.url); err != nil || got != tt.want {
			t.Errorf("urlPort(%q) = %d, %v; want %d", tt.url, got, err, tt.want)
		}
	}
}
