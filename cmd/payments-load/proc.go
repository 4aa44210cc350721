package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/procfs"
	"golang.org/x/sys/unix"
)

// The processes whose cost is measured, found and read in /proc with prometheus/procfs.
//
// A server is found from its URL's port rather than from a PID given on the command line:
// the socket listening on the port is the one the load's connections reach, so the process
// holding it is the one answering them, never a stale PID from an earlier run, nor the
// parent of `go run` or of a shell wrapper, which hold no socket. It needs what reading
// another process's file descriptors needs: the same user (or root), and the same network
// and PID namespaces (a server in a container is seen as the proxy that forwards its port,
// or not at all).

// spent is what a set of processes has spent so far: CPU time (utime + stime) and read and
// write system calls (syscr and syscw of /proc/PID/io).
type spent struct {
	cpu           time.Duration
	reads, writes uint64
}

// since is what was used between an earlier reading and u. A total that went down (a
// process read once and gone the next time) counts as nothing rather than wrapping around.
func (u spent) since(earlier spent) spent {
	return spent{
		cpu:    max(u.cpu-earlier.cpu, 0),
		reads:  u.reads - min(earlier.reads, u.reads),
		writes: u.writes - min(earlier.writes, u.writes),
	}
}

func (u spent) plus(o spent) spent {
	return spent{cpu: u.cpu + o.cpu, reads: u.reads + o.reads, writes: u.writes + o.writes}
}

// procReader reads /proc (or a copy of its layout, in tests) in clock ticks of tick.
type procReader struct {
	fs   procfs.FS
	tick time.Duration
}

// clockTick is the length of the clock tick /proc counts CPU time in: the kernel's USER_HZ,
// which it passes every process in the ELF auxiliary vector as AT_CLKTCK (where glibc's
// sysconf(_SC_CLK_TCK) reads it too). Where that cannot be read, 1/100 s: USER_HZ on every
// architecture Go runs on.
func clockTick() time.Duration {
	const atClkTck = 17 // AT_CLKTCK in <elf.h>
	if auxv, err := unix.Auxv(); err == nil {
		for _, kv := range auxv {
			if kv[0] == atClkTck && kv[1] > 0 {
				return time.Second / time.Duration(kv[1])
			}
		}
	}
	return 10 * time.Millisecond
}

func (r procReader) ticks(n uint64) time.Duration { return time.Duration(n) * r.tick }

// serverSpent sums what pids have spent. A process that is gone is an error: its CPU until it
// went cannot be read any more, so no figure is better than a low one.
func (r procReader) serverSpent(pids []int) (spent, error) {
	var u spent
	for _, pid := range pids {
		p, err := r.fs.Proc(pid)
		if err != nil {
			return spent{}, fmt.Errorf("process %d: %w", pid, err)
		}
		st, err := p.Stat()
		if err != nil {
			return spent{}, fmt.Errorf("process %d: %w", pid, err)
		}
		io, err := p.IO()
		if err != nil {
			return spent{}, fmt.Errorf("process %d: %w", pid, err)
		}
		u.cpu += r.ticks(uint64(st.UTime) + uint64(st.STime))
		u.reads += io.SyscR
		u.writes += io.SyscW
	}
	return u, nil
}

// tcpListen is the state of a listening socket in /proc/net/tcp (TCP_LISTEN).
const tcpListen = 0x0A

// listeners are the processes holding a TCP socket that listens on port at a loopback or
// unspecified address: the sockets a connection to the port on loopback can reach. Several
// are summed (SO_REUSEPORT, or a socket a child inherited).
func (r procReader) listeners(port uint64) ([]int, error) {
	inodes := map[string]bool{}
	for _, read := range []func() (procfs.NetTCP, error){r.fs.NetTCP, r.fs.NetTCP6} {
		sockets, err := read()
		if errors.Is(err, fs.ErrNotExist) {
			continue // no IPv6
		}
		if err != nil {
			return nil, err
		}
		for _, s := range sockets {
			if s.St == tcpListen && s.LocalPort == port && (s.LocalAddr.IsLoopback() || s.LocalAddr.IsUnspecified()) {
				inodes["socket:["+strconv.FormatUint(s.Inode, 10)+"]"] = true
			}
		}
	}
	if len(inodes) == 0 {
		return nil, fmt.Errorf("no socket listens on port %d", port)
	}
	procs, err := r.fs.AllProcs()
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, p := range procs {
		targets, err := p.FileDescriptorTargets()
		if err != nil {
			continue // gone since the listing, or not this user's to read
		}
		if slices.ContainsFunc(targets, func(t string) bool { return inodes[t] }) {
			pids = append(pids, p.PID)
		}
	}
	if len(pids) == 0 {
		return nil, fmt.Errorf("the socket listening on port %d is held by no process this user may read", port)
	}
	return pids, nil
}

// urlPort is the TCP port of an http(s) URL.
func urlPort(target string) (uint64, error) {
	u, err := url.Parse(target)
	if err != nil {
		return 0, err
	}
	port := u.Port()
	switch {
	case port != "":
	case u.Scheme == "https":
		port = "443"
	default:
		port = "80"
	}
	return strconv.ParseUint(port, 10, 16)
}

// postmaster is the PID of the PostgreSQL server databaseURL reaches: the parent of the
// backend serving a connection to it. Asking the server (pg_backend_pid) rather than
// reading postmaster.pid in its data directory needs no superuser and no access to the
// directory, and names the one cluster the URL reaches when a machine runs several.
func (r procReader) postmaster(ctx context.Context, databaseURL string) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, databaseURL)
	if err != nil {
		return 0, err
	}
	defer func() { _ = conn.Close(ctx) }()
	var backend int
	if err := conn.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&backend); err != nil {
		return 0, err
	}
	pid, err := r.postgresParent(backend)
	if err != nil {
		return 0, err
	}
	if _, err := r.postgresParent(pid); err != nil {
		return 0, err
	}
	return pid, nil
}

// postgresParent is the parent of pid, which must be a postgres process: a PostgreSQL in
// another PID namespace (a container) reports PIDs of its own, which here are other
// processes or none.
func (r procReader) postgresParent(pid int) (int, error) {
	p, err := r.fs.Proc(pid)
	if err != nil {
		return 0, fmt.Errorf("postgres process %d is not a process here: %w", pid, err)
	}
	st, err := p.Stat()
	if err != nil {
		return 0, err
	}
	if !isPostgresComm(st) {
		return 0, fmt.Errorf("process %d is %q, not postgres: is PostgreSQL in another PID namespace?", pid, st.Comm)
	}
	return st.PPID, nil
}

// pgCounter counts the CPU the PostgreSQL server of one postmaster has used: the
// postmaster's and that of every process it started (backends, checkpointer, background
// writer, WAL writer, autovacuum launcher and workers, parallel workers). Its spent is a
// running total, so the difference of two readings is what PostgreSQL spent between them.
//
// Processes come and go while it counts. Each reading records every child's CPU by PID
// (its utime + stime, with its own children's cutime + cstime), and the postmaster's cutime
// + cstime: the CPU of the children it has reaped, each of which the kernel adds there
// whole once it exits. From one reading to the next the total grows by
//   - the postmaster's own growth, and each child's (a child first seen counts from its start);
//   - the growth of the postmaster's reaped CPU, less what the children that have gone
//     since had already been counted for.
//
// So a backend that exits between two readings counts for what it spent after the first,
// however short-lived. A total taken as one sum per reading could not tell that apart: on a
// server where connections open and close all the time (a test suite's), a child counted in
// one reading and reaped before that reading got to the postmaster counted twice in it, and
// the next reading came out lower. Here such a child counts twice in that step and is
// taken back in the next, once its PID is gone (unless the reaped CPU then grows less than
// what it had been counted for). Still not counted: the kernel's work on PostgreSQL's
// behalf charged to no process of it (loopback packets handled in softirq of whichever
// process runs, writeback by kernel threads); and nothing tells the database measured from
// others on the same server, so any other load on it counts too. System calls are not read:
// a backend's reads and writes are its disk I/O as much as its requests.
type pgCounter struct {
	r          procReader
	postmaster int

	mu    sync.Mutex // the meters of our server and of the floor share one
	last  pgReading  // children nil before the first reading
	total uint64     // ticks
}

func newPGCounter(r procReader, postmaster int) *pgCounter {
	return &pgCounter{r: r, postmaster: postmaster}
}

// pgReading is one reading of a PostgreSQL server's processes, in ticks.
type pgReading struct {
	own      uint64         // the postmaster's utime + stime
	reaped   uint64         // its cutime + cstime
	children map[int]uint64 // withChildren of each process it started, by PID
}

// spent reads the server's processes and returns the total so far; the first reading's
// total is what they have spent since they started.
func (c *pgCounter) spent() (spent, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now, err := c.r.readPostgres(c.postmaster)
	if err != nil {
		return spent{}, err
	}
	if c.last.children == nil {
		c.total = now.own + now.reaped
		for _, v := range now.children {
			c.total += v
		}
	} else {
		c.total += now.grownSince(c.last)
	}
	c.last = now
	return spent{cpu: c.r.ticks(c.total)}, nil
}

// grownSince is what the server spent between the earlier reading and r.
func (r pgReading) grownSince(earlier pgReading) uint64 {
	grown := r.own - min(earlier.own, r.own)
	var counted uint64 // what the children gone since earlier had been counted for
	for pid, v := range r.children {
		before, seen := earlier.children[pid]
		switch {
		case !seen:
			grown += v
		case v < before: // the PID is another process's now: the earlier one is gone
			grown += v
			counted += before
		default:
			grown += v - before
		}
	}
	for pid, before := range earlier.children {
		if _, ok := r.children[pid]; !ok {
			counted += before
		}
	}
	reaped := r.reaped - min(earlier.reaped, r.reaped)
	return grown + reaped - min(counted, reaped)
}

// readPostgres reads the postmaster's children, then the postmaster: a child that exits
// in between is in the postmaster's reaped CPU.
func (r procReader) readPostgres(postmaster int) (pgReading, error) {
	procs, err := r.fs.AllProcs()
	if err != nil {
		return pgReading{}, err
	}
	reading := pgReading{children: map[int]uint64{}}
	for _, p := range procs {
		st, err := p.Stat()
		if err != nil {
			continue // exited since the listing: the postmaster's reaped CPU, read next, has it
		}
		if st.PPID == postmaster {
			reading.children[p.PID] = withChildren(st)
		}
	}
	p, err := r.fs.Proc(postmaster)
	if err != nil {
		return pgReading{}, fmt.Errorf("postmaster %d: %w", postmaster, err)
	}
	st, err := p.Stat()
	if err != nil {
		return pgReading{}, fmt.Errorf("postmaster %d: %w", postmaster, err)
	}
	reading.own = uint64(st.UTime) + uint64(st.STime)
	reading.reaped = uint64(max(st.CUTime, 0)) + uint64(max(st.CSTime, 0))
	return reading, nil
}

// withChildren is a process's CPU with that of its children it has reaped, in ticks.
func withChildren(st procfs.ProcStat) uint64 {
	return uint64(st.UTime) + uint64(st.STime) + uint64(max(st.CUTime, 0)) + uint64(max(st.CSTime, 0))
}
