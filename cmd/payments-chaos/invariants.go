package main

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"

	"github.com/jackc/pgx/v5"
)

// check is one row of the verdict: what was checked, what was found, and whether it held.
type check struct {
	name, found string
	ok          bool
	unfinished  int // deliveries or jobs still to finish, while the workers catch up
}

// The database checks read PostgreSQL itself (not through PgBouncer or the API), after the
// load has stopped and the workers have had time to finish.

// checkKeys: every create key names exactly one payment, the one its answer named; a key
// whose every answer was lost names at most one.
func checkKeys(ctx context.Context, conn *pgx.Conn, keys map[string]string) (check, error) {
	rows, err := conn.Query(ctx, `SELECT metadata->>'chaos_key', id FROM payments WHERE metadata ? 'chaos_key'`)
	if err != nil {
		return check{}, err
	}
	defer rows.Close()
	stored := map[string][]string{}
	for rows.Next() {
		var key, id string
		if err := rows.Scan(&key, &id); err != nil {
			return check{}, err
		}
		stored[key] = append(stored[key], id)
	}
	if err := rows.Err(); err != nil {
		return check{}, err
	}
	var answered, duplicated, missing, stray int
	for key, id := range keys {
		ids := stored[key]
		switch {
		case len(ids) > 1:
			duplicated++
		case id != "" && (len(ids) == 0 || ids[0] != id):
			missing++
		}
		if id != "" {
			answered++
		}
	}
	for key := range stored {
		if _, sent := keys[key]; !sent {
			stray++
		}
	}
	return check{name: "1 payment per idempotency key",
		found: fmt.Sprintf("%d keys (%d answered), %d payments; %d keys with 2+, %d answered ids missing, %d unknown keys",
			len(keys), answered, len(stored), duplicated, missing, stray),
		ok: duplicated == 0 && missing == 0 && stray == 0}, nil
}

// checkRefunds: no payment refunded above its amount, and amount_refunded is the sum of its
// refund rows.
func checkRefunds(ctx context.Context, conn *pgx.Conn) (check, error) {
	var refunds, over, mismatched int
	err := conn.QueryRow(ctx, `
		SELECT (SELECT count(*) FROM refunds),
		       count(*) FILTER (WHERE r.total > p.amount),
		       count(*) FILTER (WHERE r.total <> p.amount_refunded)
		FROM payments p
		CROSS JOIN LATERAL (SELECT coalesce(sum(amount), 0) AS total FROM refunds WHERE payment_id = p.id) r`).
		Scan(&refunds, &over, &mismatched)
	return check{name: "refunds never above their payment",
		found: fmt.Sprintf("%d refunds; %d payments over, %d with amount_refunded ≠ sum", refunds, over, mismatched),
		ok:    over == 0 && mismatched == 0}, err
}

// checkDeliveries: every event has a succeeded delivery to the run's endpoint; the receiver
// counts what came twice (at least once allows it, and says how often).
func checkDeliveries(ctx context.Context, conn *pgx.Conn, endpoint string, r *receiver) (check, error) {
	var events, undelivered, failed int
	err := conn.QueryRow(ctx, `
		SELECT count(*),
		       count(*) FILTER (WHERE NOT EXISTS (SELECT 1 FROM webhook_deliveries d
		           WHERE d.event_id = e.id AND d.endpoint_id = $1 AND d.status = 'succeeded')),
		       (SELECT count(*) FROM webhook_deliveries WHERE status = 'failed')
		FROM events e`, endpoint).Scan(&events, &undelivered, &failed)
	distinct, duplicates := r.counts()
	unsigned := r.unsigned.Load() // once: deliveries still arrive while the run settles
	return check{name: "every event delivered at least once",
		found: fmt.Sprintf("%d events, %d undelivered, %d deliveries failed; received %d, %d duplicates, %d badly signed",
			events, undelivered, failed, distinct, duplicates, unsigned),
		ok: undelivered == 0 && unsigned == 0, unfinished: undelivered}, err
}

// checkJobs: every report job ended (succeeded, failed or canceled).
func checkJobs(ctx context.Context, conn *pgx.Conn, accepted int64) (check, error) {
	rows, err := conn.Query(ctx, `SELECT status, count(*) FROM jobs GROUP BY status ORDER BY status`)
	if err != nil {
		return check{}, err
	}
	defer rows.Close()
	var parts []string
	total, open := 0, 0
	for rows.Next() {
		var status string
		var n int
		if err := rows.Scan(&status, &n); err != nil {
			return check{}, err
		}
		parts = append(parts, fmt.Sprintf("%d %s", n, status))
		total += n
		if status == "queued" || status == "running" {
			open += n
		}
	}
	return check{name: "every report job terminal",
		found: fmt.Sprintf("%d accepted, %d jobs: %s", accepted, total, strings.Join(parts, ", ")),
		ok:    open == 0 && int64(total) >= accepted, unfinished: open}, rows.Err()
}

// checkStatuses: no 500 ever, and every 5xx a 503 with Retry-After.
func checkStatuses(exchanges []exchange) check {
	var bad []string
	counts := map[string]int{}
	for _, e := range exchanges {
		if e.Status >= 500 && (e.Status != http.StatusServiceUnavailable || !e.RetryAfter) {
			counts[statusLabel(e)]++
		}
	}
	for label, n := range counts {
		bad = append(bad, fmt.Sprintf("%d × %s", n, label))
	}
	sort.Strings(bad)
	found := "none"
	if len(bad) > 0 {
		found = strings.Join(bad, ", ")
	}
	return check{name: "no 5xx but 503 with Retry-After", found: found, ok: len(bad) == 0}
}

// statusLabel names an exchange's outcome for the tables.
func statusLabel(e exchange) string {
	switch {
	case e.Status == 0:
		return "no answer"
	case e.Status >= 500 && e.RetryAfter:
		return fmt.Sprintf("%d + Retry-After", e.Status)
	case e.Status >= 500:
		return fmt.Sprintf("%d without Retry-After", e.Status)
	}
	return fmt.Sprint(e.Status)
}

// checkAcknowledged looks up, on the final primary, everything a client was answered 201
// for: each payment and refund by its id, and each of their idempotency keys with its stored
// answer. A failover that promoted a standby without the last commits loses some of them.
func checkAcknowledged(ctx context.Context, conn *pgx.Conn, payments, refunds map[string]string) (check, error) {
	var paymentIDs, refundIDs, keys []string
	for key, id := range payments {
		if id != "" {
			paymentIDs, keys = append(paymentIDs, id), append(keys, key)
		}
	}
	for key, id := range refunds {
		refundIDs, keys = append(refundIDs, id), append(keys, key)
	}
	var primary string
	var lostPayments, lostRefunds, lostKeys int
	err := conn.QueryRow(ctx, `
		SELECT coalesce(host(inet_server_addr()), 'a local socket'),
		       (SELECT count(*) FROM unnest($1::text[]) a(id) WHERE NOT EXISTS (SELECT 1 FROM payments p WHERE p.id = a.id)),
		       (SELECT count(*) FROM unnest($2::text[]) a(id) WHERE NOT EXISTS (SELECT 1 FROM refunds r WHERE r.id = a.id)),
		       (SELECT count(*) FROM unnest($3::text[]) a(key) WHERE NOT EXISTS
		           (SELECT 1 FROM idempotency_keys k WHERE k.key = a.key AND k.response_status IS NOT NULL))`,
		paymentIDs, refundIDs, keys).Scan(&primary, &lostPayments, &lostRefunds, &lostKeys)
	return check{name: "every acknowledged write exists",
		found: fmt.Sprintf("on %s: %d of %d payments, %d of %d refunds, %d of %d keys missing",
			primary, lostPayments, len(paymentIDs), lostRefunds, len(refundIDs), lostKeys, len(keys)),
		ok: lostPayments == 0 && lostRefunds == 0 && lostKeys == 0}, err
}
