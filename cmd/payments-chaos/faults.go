package main

import (
	"context"
	"encoding/json"
	"fmt"
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
}

// faultRecord is when a fault began and was cleared, when the broken part was back, when
// the first request sent after the clearing succeeded (healed; 0 when none did), and how
// many requests sent meanwhile got no answer or a 5xx.
type faultRecord struct {
	name                         string
	began, cleared, back, healed time.Duration
	failed                       int
	err                          error
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
		r := faultRecord{name: f.name, began: h.now()}
		if err := f.begin(); err != nil {
			r.err = err
		}
		select { // an interrupted run still ends the fault below
		case <-ctx.Done():
		case <-time.After(f.hold):
		}
		r.cleared = h.now()
		endCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
		if err := f.end(endCtx); err != nil && r.err == nil {
			r.err = fmt.Errorf("clear: %w", err)
		}
		cancel()
		r.back = h.now()
		records = append(records, r)
	}
}

// heal fills in each record's heal time from the exchanges (the return of the first
// successful request sent after the fault was cleared) and its failed requests.
func heal(records []faultRecord, exchanges []exchange) {
	for i := range records {
		r := &records[i]
		for _, e := range exchanges {
			if e.ok() && e.Call >= r.cleared && (r.healed == 0 || e.Return < r.healed) {
				r.healed = e.Return
			}
		}
		for _, e := range exchanges {
			if e.Call >= r.began && (r.healed == 0 || e.Call <= r.healed) && (e.Status == 0 || e.Status >= 500) {
				r.failed++
			}
		}
	}
}
