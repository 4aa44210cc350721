package db_test

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/payments-api/payments-api/internal/db"
	"github.com/payments-api/payments-api/internal/testing/dbtest"
)

// TestJSONAndBytesInEveryExecMode writes every jsonb parameter the queries take, and the
// bytea beside them, in each of pgx's query exec modes, and reads them back. exec and
// simple_protocol, two of the modes a transaction pooler allows, type a parameter by its Go
// value rather than by what PostgreSQL expects: a jsonb value sent as []byte would go as
// bytea, and PostgreSQL would refuse it as JSON.
func TestJSONAndBytesInEveryExecMode(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"cache_statement", "cache_describe", "describe_exec", "exec", "simple_protocol"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			pool, err := db.Open(ctx, dbtest.NewURL(t)+"&default_query_exec_mode="+mode, db.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer pool.Close()
			q := db.New(pool)
			const account, paymentID = "acct_modes", "pay_modes"
			order := json.RawMessage(`{"order":"42"}`)
			if err := q.AccountCreateIfMissing(ctx, account); err != nil {
				t.Fatal(err)
			}
			if err := q.PaymentInsert(ctx, db.PaymentInsertParams{ID: paymentID, AccountID: account, Amount: 100,
				Currency: "usd", Status: "succeeded", PaymentMethod: "pm_card_visa", Metadata: order, CreatedAt: time.Now()}); err != nil {
				t.Fatalf("PaymentInsert: %v", err)
			}
			p, err := q.PaymentUpdate(ctx, db.PaymentUpdateParams{MetadataPatch: json.RawMessage(`{"note":"a"}`),
				AccountID: account, ID: paymentID, AnyVersion: true})
			sameJSON(t, "PaymentUpdate", p.Metadata, err, `{"note":"a","order":"42"}`)
			r, err := q.RefundInsert(ctx, db.RefundInsertParams{ID: "re_modes", AccountID: account, PaymentID: paymentID,
				Amount: 1, Currency: "usd", Metadata: order})
			sameJSON(t, "RefundInsert", r.Metadata, err, string(order))
			if err := q.EventInsert(ctx, db.EventInsertParams{ID: "evt_modes", AccountID: account, Type: "payment.succeeded", Data: order}); err != nil {
				t.Fatalf("EventInsert: %v", err)
			}
			e, err := q.EventGetByID(ctx, db.EventGetByIDParams{AccountID: account, ID: "evt_modes"})
			sameJSON(t, "EventInsert", e.Data, err, string(order))
			checkIdempotencyKeyBytes(t, q)
		})
	}
}

// checkIdempotencyKeyBytes records a key's use with a bytea fingerprint, jsonb headers and
// a bytea body, bytes that are not valid UTF-8 among them, and reads it back.
func checkIdempotencyKeyBytes(t *testing.T, q *db.Queries) {
	t.Helper()
	ctx := context.Background()
	key := db.IdempotencyKeyGetParams{AccountID: "acct_modes", Operation: "payment.create", Key: "k1"}
	fingerprint, body := []byte{0, 1, 0xfe, 0xff}, []byte("{\"id\":\"pay_modes\"}\xff")
	status := int32(201)
	if err := q.IdempotencyKeyInsert(ctx, db.IdempotencyKeyInsertParams{AccountID: key.AccountID, Operation: key.Operation,
		Key: key.Key, Fingerprint: fingerprint, ResponseStatus: &status,
		ResponseHeaders: json.RawMessage(`{"Etag":["\"v1\""]}`), ResponseBody: body, TtlSeconds: 60}); err != nil {
		t.Fatalf("IdempotencyKeyInsert: %v", err)
	}
	rows, err := q.IdempotencyKeyGet(ctx, key)
	if err == nil && len(rows) != 1 {
		t.Fatalf("IdempotencyKeyGet read %d rows, want 1", len(rows))
	}
	var k db.IdempotencyKeyGetRow
	if err == nil {
		k = rows[0]
	}
	sameJSON(t, "IdempotencyKeyInsert", k.ResponseHeaders, err, `{"Etag":["\"v1\""]}`)
	if !bytes.Equal(k.Fingerprint, fingerprint) || !bytes.Equal(k.ResponseBody, body) {
		t.Errorf("bytea read back as fingerprint %x, body %q; want %x, %q", k.Fingerprint, k.ResponseBody, fingerprint, body)
	}
}

// sameJSON checks that what came back from a query is want, as JSON (jsonb spaces its output).
func sameJSON(t *testing.T, query string, got json.RawMessage, err error, want string) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, got); err != nil || compact.String() != want {
		t.Errorf("%s: read back %s (%v), want %s", query, got, err, want)
	}
}
