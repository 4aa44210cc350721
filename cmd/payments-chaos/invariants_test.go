package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/payments-api/payments-api/internal/app"
	"github.com/payments-api/payments-api/internal/ratelimit"
	"github.com/payments-api/payments-api/internal/testing/apptest"
	"github.com/payments-api/payments-api/internal/testing/dbtest"
)

// TestCheckAcknowledgedFindsWhatIsMissing drives the load's own create and refunds against
// the real server, so the check reads what a run records, then loses one payment, one refund
// and one key the way a failover would (answered 201, absent afterwards).
func TestCheckAcknowledgedFindsWhatIsMissing(t *testing.T) {
	ctx := context.Background()
	cfg := apptest.Config(dbtest.NewURL(t), demoKey)
	limits := &ratelimit.Limits{ // far above what one payment sends
		Default: ratelimit.Policy{Name: "default", Rate: ratelimit.Rate{Quota: 1000, Window: time.Second}},
		Writes:  ratelimit.Policy{Name: "writes", Rate: ratelimit.Rate{Quota: 1000, Window: time.Second}},
	}
	a, err := app.New(ctx, cfg, slog.New(slog.DiscardHandler), apptest.Fixed(limits))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	srv := httptest.NewServer(a.Handler)
	t.Cleanup(srv.Close)
	l := &load{client: &client{base: srv.URL, key: demoKey, history: newHistory(), http: srv.Client()}, run: "t"}
	l.payment(ctx, 1)

	keys, refunds := map[string]string{}, map[string]string{}
	l.keys.Range(func(k, v any) bool { keys[k.(string)] = v.(string); return true })
	l.refunds.Range(func(k, v any) bool { refunds[k.(string)] = v.(string); return true })
	if len(keys) != 1 || len(refunds) == 0 {
		t.Fatalf("the load recorded %d payments and %d refunds answered 201, want 1 and some", len(keys), len(refunds))
	}
	conn, err := pgx.Connect(ctx, cfg.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close(ctx) })

	c, err := checkAcknowledged(ctx, conn, keys, refunds)
	if err != nil || !c.ok {
		t.Fatalf("everything answered 201 is there: %+v, %v", c, err)
	}
	keys["t-pay-lost"] = "pay_lost"
	refunds["t-re-lost"] = "re_lost"
	c, err = checkAcknowledged(ctx, conn, keys, refunds)
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("1 of 2 payments, 1 of %d refunds, 2 of %d keys missing", len(refunds), len(keys)+len(refunds))
	if c.ok || !strings.Contains(c.found, want) {
		t.Errorf("a lost payment, refund and their keys: %s (ok %v), want %q", c.found, c.ok, want)
	}
}
