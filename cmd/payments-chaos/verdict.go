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

	// Deliveries and jobs finish after the load: wait until both checks pass, or settle.
	var deliveries, jobs check
	settled := poll(ctx, o.settle, func() bool {
		var err1, err2 error
		deliveries, err1 = checkDeliveries(ctx, conn, endpoint, recv)
		jobs, err2 = checkJobs(ctx, conn, l.reports.Load())
		return err1 == nil && err2 == nil && deliveries.ok && jobs.ok
	}) == nil
	fmt.Printf("settled: %t after %s\n\n", settled, l.client.history.now().Round(time.Second))

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
