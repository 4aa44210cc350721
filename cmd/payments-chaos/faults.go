package main

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/Shopify/toxiproxy/v2"
)

// fault is one thing the schedule does to the cluster: begin breaks it, end undoes it and
// waits until the broken part is back (a restarted API ready, PgBouncer accepting).
type fault struct {
	name  string
	hold  time.Duration
	begin func() error
	end   func(ctx context.Context) error
	// writesWithin, when set, is the longest the fault may leave the load without an
	// acknowledged write (a database fault's target).
	writesWithin time.Duration
	// timeline, when set, reads the primary's timeline before the fault and once it is
	// cleared: each promotion starts a new one. promotes is how many the fault should make.
	timeline func(ctx context.Context) (int, error)
	promotes int
}

// faultRecord is when a fault began and was cleared, when the broken part was back, when
// the first request sent after the clearing succeeded (healed; 0 when none did), how many
// requests sent meanwhile were answered 503 with Retry-After (unavailable) or failed
// otherwise (no answer, another 5xx), and the longest stretch from its beginning until
// writes flowed again with no write acknowledged (writesPaused; -1 when none ever was).
type faultRecord struct {
	name                         string
	began, cleared, back, healed time.Duration
	unavailable, failed          int
	writesPaused, writesWithin   time.Duration
	timelines                    [2]int // before and after; 0 when not read
	promotes                     int
	err                          error // beginning the fault or reading a timeline failed
	notCleared                   error // the fault's end never saw the system whole again
}

// faults is the schedule's cycle: each kind of fault in turn, round robin over the APIs and
// workers.
func (cl *cluster) faults() []fault {
	var fs []fault
	kill := func(p *process, ready func(context.Context) error) fault {
		return fault{name: "kill -9 " + p.name, hold: 3 * time.Second,
			begin: func() error { p.signal(syscall.SIGKILL, 5*time.Second); return nil },
			end: func(ctx context.Context) error {
				if err := p.start(); err != nil {
					return err
				}
				return ready(ctx)
			}}
	}
	noWait := func(context.Context) error { return nil }
	for i := range max(len(cl.apis), len(cl.workers)) {
		api, worker := cl.apis[i%len(cl.apis)], cl.workers[i%len(cl.workers)]
		addr := cl.apiAddrs[i%len(cl.apis)]
		fs = append(fs,
			kill(api, func(ctx context.Context) error { return waitReady(ctx, addr) }),
			toxicFault(cl.db, "latency 200±100 ms to PgBouncer", 10*time.Second,
				"latency", map[string]any{"latency": 200, "jitter": 100}),
			kill(worker, noWait),
			fault{name: "restart PgBouncer", hold: 2 * time.Second,
				begin: func() error { cl.pgbouncer.signal(syscall.SIGTERM, 5*time.Second); return nil },
				end: func(ctx context.Context) error {
					if err := cl.pgbouncer.start(); err != nil {
						return err
					}
					return waitTCP(ctx, cl.pgbouncerAddr)
				}},
			fault{name: "cut Redis", hold: 10 * time.Second,
				begin: func() error { cl.redis.Stop(); return nil },
				end:   func(context.Context) error { return cl.redis.Start() }},
			toxicFault(cl.db, "reset_peer to PgBouncer", 5*time.Second,
				"reset_peer", map[string]any{"timeout": 500}),
			toxicFault(cl.db, "timeout to PgBouncer (answers dropped)", 6*time.Second,
				"timeout", map[string]any{"timeout": 2000}),
		)
	}
	return fs
}

// toxicFault adds a Toxiproxy toxic downstream (on what comes back: the request arrives,
// the answer is delayed, cut or lost) for hold.
func toxicFault(p *toxiproxy.Proxy, name string, hold time.Duration, kind string, attrs map[string]any) fault {
	return fault{name: name, hold: hold,
		begin: func() error {
			body, err := json.Marshal(map[string]any{"name": kind, "type": kind, "stream": "downstream", "attributes": attrs})
			if err != nil {
				return err
			}
			_, err = p.Toxics.AddToxicJson(strings.NewReader(string(body)))
			return err
		},
		end: func(ctx context.Context) error { p.Toxics.ResetToxics(ctx); return nil }}
}

// runFaults applies the faults in turn, each after gap, until ctx is done or no whole fault
// fits before the deadline; it returns what happened.
func runFaults(ctx context.Context, h *history, fs []fault, gap time.Duration, deadline time.Duration) []faultRecord {
	var records []faultRecord
	for i := 0; ; i++ {
		f := fs[i%len(fs)]
		if h.now()+gap+f.hold+gap > deadline {
			return records
		}
		select {
		case <-ctx.Done():
			return records
		case <-time.After(gap):
		}
		r := faultRecord{name: f.name, began: h.now(), writesWithin: f.writesWithin, promotes: f.promotes}
		if f.timeline != nil {
			r.timelines[0], r.err = f.timeline(ctx)
		}
		if err := f.begin(); err != nil && r.err == nil {
			r.err = err
		}
		select { // an interrupted run still ends the fault below
		case <-ctx.Done():
		case <-time.After(f.hold):
		}
		r.cleared = h.now()
		// A database fault ends when Patroni has rejoined the old primary, which can take
		// a pg_rewind and a restart.
		endCtx, cancel := context.WithTimeout(ctx, 5*time.Minute)
		r.notCleared = f.end(endCtx)
		cancel()
		r.back = h.now()
		// The primary's timeline is read even when a node has not rejoined yet: a promotion
		// is over once there is a primary to write to, however long the old one takes.
		if f.timeline != nil && r.err == nil {
			readCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
			r.timelines[1], r.err = f.timeline(readCtx)
			cancel()
		}
		records = append(records, r)
	}
}

// heal fills in each record from the exchanges: its heal time (the return of the first
// successful request sent after the fault was cleared), the requests sent from its beginning
// until then that failed, and the longest pause in acknowledged writes.
func heal(records []faultRecord, exchanges []exchange) {
	var writes []time.Duration // the returns of acknowledged writes, in order
	for _, e := range exchanges {
		if e.ok() && e.Write {
			writes = append(writes, e.Return)
		}
	}
	slices.Sort(writes)
	for i := range records {
		r := &records[i]
		for _, e := range exchanges {
			if e.ok() && e.Call >= r.cleared && (r.healed == 0 || e.Return < r.healed) {
				r.healed = e.Return
			}
		}
		for _, e := range exchanges {
			if e.Call < r.began || r.healed != 0 && e.Call > r.healed {
				continue
			}
			switch {
			case e.Status == http.StatusServiceUnavailable && e.RetryAfter:
				r.unavailable++
			case e.Status == 0 || e.Status >= 500:
				r.failed++
			}
		}
		r.writesPaused = writesPaused(writes, r.began, max(r.back, r.healed))
	}
}

// writesPaused is the longest gap between acknowledged writes (their returns, sorted) from
// began until the first one after until: the time the load could not write. It is -1 when
// no write was acknowledged after until.
func writesPaused(writes []time.Duration, began, until time.Duration) time.Duration {
	longest, last := time.Duration(0), began
	for _, w := range writes {
		if w <= began {
			continue
		}
		longest = max(longest, w-last)
		if w >= until {
			return longest
		}
		last = w
	}
	return -1
}
