package main

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/payments-api/payments-api/internal/testing/apitest"
)

// TestPreloadedRowsServeTheAPI preloads a few hundred payments into a real server's database
// and checks that every table got its rows, and that the server reads them as its own: a
// refunded payment with its version's ETag, a replay of a preloaded idempotency key, and a
// list page that starts after a preloaded payment.
func TestPreloadedRowsServeTheAPI(t *testing.T) {
	baseURL, databaseURL := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pool, err := pgxpool.New(ctx, databaseURL)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	const n = 300
	p, counts, err := preload(ctx, pool, smokeKey, n)
	if err != nil {
		t.Fatal(err)
	}
	// One payment in five is refunded (every one in the key's account), and every event of
	// the key's account (nine payments in ten, and every refund) is delivered.
	want := map[string]int64{"payments": n, "refunds": n / 5, "events": n + n/5, "webhook_deliveries": n*9/10 + n/5, "idempotency_keys": n + n/5}
	for table, w := range want {
		var got int64
		if err := pool.QueryRow(ctx, "SELECT count(*) FROM "+table).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != w || counts[table] != w {
			t.Errorf("%s: %d rows, COPY reported %d, want %d", table, got, counts[table], w)
		}
	}

	api := apitest.NewClient(t, baseURL, smokeKey)
	refunded := p.payment(100) // i%5 == 0: refunded in part, in the key's account
	res := api.Get("/payments/" + refunded.payment.ID)
	var got struct {
		Status         string
		AmountRefunded int64 `json:"amount_refunded"`
	}
	res.Decode(t, &got)
	if res.Status != http.StatusOK || res.Header.Get("ETag") != `"v2"` || got.Status != "partially_refunded" ||
		got.AmountRefunded != refunded.refund.Amount {
		t.Errorf("GET a refunded preloaded payment: %d, ETag %s, %+v", res.Status, res.Header.Get("ETag"), got)
	}

	plain := p.payment(101)
	replay := api.Post("/payments", map[string]any{"amount": plain.payment.Amount, "currency": "usd", "payment_method": "pm_card_visa"},
		apitest.Header("Idempotency-Key", p.id("key", 2*101)))
	if replay.Status != http.StatusCreated || replay.Header.Get("Idempotent-Replayed") != "true" ||
		replay.Header.Get("Location") != "/payments/"+plain.payment.ID {
		t.Errorf("replay of a preloaded key: %d, replayed %q, Location %q", replay.Status,
			replay.Header.Get("Idempotent-Replayed"), replay.Header.Get("Location"))
	}

	// Newest first after payment 200: 199 is another account's, so 198, 197, 196.
	var page struct {
		Data    []struct{ ID string }
		HasMore bool `json:"has_more"`
	}
	api.Get("/payments?limit=3&starting_after="+p.payment(200).payment.ID).Decode(t, &page)
	wantIDs := fmt.Sprint([]string{p.id("pay", 198), p.id("pay", 197), p.id("pay", 196)})
	var ids []string
	for _, d := range page.Data {
		ids = append(ids, d.ID)
	}
	if fmt.Sprint(ids) != wantIDs || !page.HasMore {
		t.Errorf("page after payment 200: %v, has_more %v; want %s, true", ids, page.HasMore, wantIDs)
	}

	// The refunded payment's own event carries it as it was made, as the server's would.
	var status string
	var refundedAmount int64
	err = pool.QueryRow(ctx, `SELECT data->>'status', (data->>'amount_refunded')::bigint FROM events
		WHERE type = 'payment.succeeded' AND data->>'id' = $1`, refunded.payment.ID).Scan(&status, &refundedAmount)
	if err != nil || status != "succeeded" || refundedAmount != 0 {
		t.Errorf("the refunded payment's payment.succeeded event: %q, amount_refunded %d, %v; want succeeded, 0", status, refundedAmount, err)
	}
}
