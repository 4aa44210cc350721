package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/jackc/pgx/v5"
	"github.com/payments-api/payments-api/internal/textout"
)

// verdict waits for the workers to finish what the load caused, runs every check and
// prints the tables.
func verdict(ctx context.Context, o config, l *load, endpoint string, recv *receiver, records []faultRecord) (bool, error) {
	connectCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(connectCtx, o.cluster.directURL)
	if err != nil {
		return false, err
	}
	// A check waits on no lock, so a statement that runs a minute means a stuck database:
	// the verdict fails rather than hang.
	if _, err := conn.Exec(ctx, "SET statement_timeout = '60s'"); err != nil {
		return false, err
	}
	// Only read through, and every check is in hand before it closes: a failed close
	// cannot change the verdict.
	defer func() { _ = conn.Close(context.WithoutCancel(ctx)) }()
	keys, refunds := map[string]string{}, map[string]string{}
	l.keys.Range(func(k, v any) bool { keys[k.(string)] = v.(string); return true })
	l.refunds.Range(func(k, v any) bool { refunds[k.(string)] = v.(string); return true })

	deliveries, jobs, err := settle(ctx, o.settle, func() (check, check, error) {
		d, err := checkDeliveries(ctx, conn, endpoint, recv)
		if err != nil {
			return d, check{}, err
		}
		j, err := checkJobs(ctx, conn, l.reports.Load())
		return d, j, err
	})
	if err != nil {
		return false, err
	}
	fmt.Printf("%d deliveries and jobs unfinished at %s\n\n", deliveries.unfinished+jobs.unfinished,
		l.client.history.now().Round(time.Second))

	exchanges, ops := l.client.history.snapshot()
	heal(records, exchanges)
	keyCheck, err := checkKeys(ctx, conn, keys)
	if err != nil {
		return false, err
	}
	acknowledged, err := checkAcknowledged(ctx, conn, keys, refunds)
	if err != nil {
		return false, err
	}
	refundCheck, err := checkRefunds(ctx, conn)
	if err != nil {
		return false, err
	}
	checks := []check{acknowledged, keyCheck, refundCheck, deliveries, jobs, checkStatuses(exchanges), linearizable(o, ops)}
	if len(o.dbFaults) > 0 {
		checks = append(checks, checkTimelines(ctx, o.nodes), checkPromotions(records), checkWriteTargets(records), checkCleared(records))
	}

	printStatuses(exchanges)
	if err := printFaults(os.Stdout, records); err != nil {
		return false, err
	}
	return printChecks(os.Stdout, checks)
}

// settle waits while the workers catch up with the load (webhook deliveries lag behind
// it on a busy machine): until both checks hold, or until stall passes with nothing more
// finished, and at most settleLimit; it returns the last checks.
func settle(ctx context.Context, stall time.Duration, measure func() (check, check, error)) (check, check, error) {
	best, progress, start := -1, time.Now(), time.Now()
	for {
		d, j, err := measure()
		if err != nil || d.ok && j.ok {
			return d, j, err
		}
		left := d.unfinished + j.unfinished
		if best < 0 {
			fmt.Printf("%d deliveries and jobs unfinished when the load stopped\n", left)
		}
		if best < 0 || left < best {
			best, progress = left, time.Now()
		}
		if time.Since(progress) > stall || time.Since(start) > settleLimit {
			return d, j, nil
		}
		select {
		case <-ctx.Done():
			return d, j, ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// settleLimit bounds the wait for the workers, however steadily they progress.
const settleLimit = 15 * time.Minute

// linearizable checks every payment's history against the model of one payment.
func linearizable(o config, ops []porcupine.Operation) check {
	res, info := porcupine.CheckOperationsVerbose(paymentModel, ops, 5*time.Minute)
	partitions := paymentModel.Partition(ops)
	c := check{name: "each payment's history linearizable",
		found: fmt.Sprintf("%d operations on %d payments: %s", len(ops), len(partitions), res), ok: res == porcupine.Ok}
	if res == porcupine.Unknown {
		c.found += "; " + largestHistories(partitions, 3)
	}
	if res == porcupine.Illegal {
		path := o.html
		if path == "" {
			f, err := os.CreateTemp("", "payments-chaos-*.html")
			if err != nil {
				c.found += "; " + err.Error()
				return c
			}
			path = f.Name()
			if err := f.Close(); err != nil {
				c.found += "; " + err.Error()
				return c
			}
		}
		if err := porcupine.VisualizePath(paymentModel, info, path); err != nil {
			c.found += "; " + err.Error()
		} else {
			c.found += "; see " + path
		}
	}
	return c
}

func printStatuses(exchanges []exchange) {
	counts := map[string]int{}
	for _, e := range exchanges {
		counts[statusLabel(e)]++
	}
	labels := make([]string, 0, len(counts))
	for l := range counts {
		labels = append(labels, l)
	}
	sort.Strings(labels)
	parts := make([]string, len(labels))
	for i, l := range labels {
		parts[i] = fmt.Sprintf("%s: %d", l, counts[l])
	}
	fmt.Printf("requests  %d\nstatuses  %s\n\n", len(exchanges), strings.Join(parts, ", "))
}

func printFaults(out io.Writer, records []faultRecord) error {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	table := &textout.Printer{W: tw}
	table.Printf("FAULT\tAT\tHELD\tBACK AFTER\tHEALED AFTER\tWRITES PAUSED\t503 + RETRY-AFTER\tOTHER FAILURES\tTIMELINE\n")
	for _, r := range records {
		healed, paused := "never", "never resumed"
		if r.healed > 0 {
			healed = seconds(r.healed - r.cleared)
		}
		if r.writesPaused >= 0 {
			paused = seconds(r.writesPaused)
		}
		name := r.name
		if r.err != nil {
			name += " (" + r.err.Error() + ")"
		}
		if r.notCleared != nil {
			name += " (not cleared: " + r.notCleared.Error() + ")"
		}
		timeline := "-"
		if r.timelines[0] != 0 {
			timeline = fmt.Sprintf("%d → %d", r.timelines[0], r.timelines[1])
		}
		table.Printf("%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t%s\n", name, seconds(r.began), seconds(r.cleared-r.began),
			seconds(r.back-r.cleared), healed, paused, r.unavailable, r.failed, timeline)
	}
	table.Printf("\n") // a blank line after the table; it ends the table's columns too
	if err := textout.FlushTable(table, tw); err != nil {
		return fmt.Errorf("print faults: %w", err)
	}
	return nil
}

// printChecks prints the verdict and says whether every check held.
func printChecks(out io.Writer, checks []check) (bool, error) {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	table := &textout.Printer{W: tw}
	table.Printf("INVARIANT\tVERDICT\tFOUND\n")
	all := true
	for _, c := range checks {
		verdict := "ok"
		if !c.ok {
			verdict, all = "FAILED", false
		}
		table.Printf("%s\t%s\t%s\n", c.name, verdict, c.found)
	}
	if err := textout.FlushTable(table, tw); err != nil {
		return all, fmt.Errorf("print checks: %w", err)
	}
	return all, nil
}

func seconds(d time.Duration) string { return fmt.Sprintf("%.2fs", d.Seconds()) }

// largestHistories names the n payments with the most operations, and how many of those were
// open-ended (their answers lost): where Porcupine's search spends its time when it does not
// finish.
func largestHistories(partitions [][]porcupine.Operation, n int) string {
	sorted := slices.SortedFunc(slices.Values(partitions), func(a, b []porcupine.Operation) int { return len(b) - len(a) })
	var parts []string
	for _, ops := range sorted[:min(n, len(sorted))] {
		open := 0
		for _, op := range ops {
			if op.Return == math.MaxInt64 {
				open++
			}
		}
		parts = append(parts, fmt.Sprintf("payment %d: %d operations, %d open-ended", ops[0].Input.(paymentInput).Payment, len(ops), open))
	}
	return "largest: " + strings.Join(parts, ", ")
}
