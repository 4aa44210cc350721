package main

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/jackc/pgx/v5"
)

// verdict waits for the workers to finish what the load caused, runs every check and
// prints the tables.
func verdict(ctx context.Context, o options, l *load, endpoint string, recv *receiver, records []faultRecord) (bool, error) {
	conn, err := pgx.Connect(ctx, o.cluster.directURL)
	if err != nil {
		return false, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	keys := map[string]string{}
	l.keys.Range(func(k, v any) bool { keys[k.(string)] = v.(string); return true })

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
	refunds, err := checkRefunds(ctx, conn)
	if err != nil {
		return false, err
	}
	checks := []check{keyCheck, refunds, deliveries, jobs, checkStatuses(exchanges), linearizable(o, ops)}

	printStatuses(exchanges)
	printFaults(records)
	ok := printChecks(checks)
	return ok, nil
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
func linearizable(o options, ops []porcupine.Operation) check {
	res, info := porcupine.CheckOperationsVerbose(paymentModel, ops, time.Minute)
	payments := len(paymentModel.Partition(ops))
	c := check{name: "each payment's history linearizable",
		found: fmt.Sprintf("%d operations on %d payments: %s", len(ops), payments, res), ok: res == porcupine.Ok}
	if res == porcupine.Illegal {
		path := o.html
		if path == "" {
			f, err := os.CreateTemp("", "payments-chaos-*.html")
			if err != nil {
				c.found += "; " + err.Error()
				return c
			}
			path = f.Name()
			f.Close()
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

func printFaults(records []faultRecord) {
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "FAULT\tAT\tHELD\tBACK AFTER\tHEALED AFTER\tFAILED REQUESTS")
	for _, r := range records {
		healed := "never"
		if r.healed > 0 {
			healed = seconds(r.healed - r.cleared)
		}
		name := r.name
		if r.err != nil {
			name += " (" + r.err.Error() + ")"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%d\n", name, seconds(r.began), seconds(r.cleared-r.began),
			seconds(r.back-r.cleared), healed, r.failed)
	}
	w.Flush()
	fmt.Println()
}

// printChecks prints the verdict and says whether every check held.
func printChecks(checks []check) bool {
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "INVARIANT\tVERDICT\tFOUND")
	all := true
	for _, c := range checks {
		verdict := "ok"
		if !c.ok {
			verdict, all = "FAILED", false
		}
		fmt.Fprintf(w, "%s\t%s\t%s\n", c.name, verdict, c.found)
	}
	w.Flush()
	return all
}

func seconds(d time.Duration) string { return fmt.Sprintf("%.2fs", d.Seconds()) }
