package handlers_test

import (
	"bytes"
	"net/http"
	"slices"
	"testing"

	"github.com/payments-api/payments-api/internal/processor"
	"github.com/payments-api/payments-api/internal/testing/apitest"
)

type refund struct {
	ID        string  `json:"id"`
	PaymentID string  `json:"payment_id"`
	Amount    int64   `json:"amount"`
	Currency  string  `json:"currency"`
	Status    string  `json:"status"`
	Reason    *string `json:"reason"`
}

func refundOf(paymentID string, amount int) map[string]any {
	return map[string]any{"payment_id": paymentID, "amount": amount}
}

func getPayment(t *testing.T, c *apitest.Client, id string) (payment, string) {
	t.Helper()
	res := c.Get("/payments/" + id)
	if res.Status != http.StatusOK {
		t.Fatalf("get payment %s: %d %s", id, res.Status, res.Body)
	}
	var p payment
	res.Decode(t, &p)
	return p, res.Header.Get("ETag")
}

// TestConcurrentRefundsNeverExceedThePayment fires 20 refunds of 10 at a payment of 100,
// each with its own key, split across two server instances, and holds them all inside their
// transactions behind the test's lock on the payment's row: exactly 10 succeed, because each
// refund locks the payment before it reads what is left.
func TestConcurrentRefundsNeverExceedThePayment(t *testing.T) {
	t.Parallel()
	b := setup(t)
	clients := []*apitest.Client{b.client, b.secondInstance(t).client}
	pay, _ := createPayment(t, b.client, 100)

	const n = 20
	responses := b.fireBehindPaymentLock(t, pay.ID, n, func(i int) *apitest.Response {
		return clients[i%2].Post("/refunds", refundOf(pay.ID, 10), apitest.Header("Idempotency-Key", newKey()))
	})

	var succeeded, exceeded int
	for _, res := range responses {
		switch res.Status {
		case http.StatusCreated:
			succeeded++
		case http.StatusUnprocessableEntity:
			exceeded++
			if p := res.Problem(t); p.Type != "/problems/refund-exceeds-payment" || p.Raw["amount_refundable"] != float64(0) {
				t.Errorf("422 %s amount_refundable %v", p.Type, p.Raw["amount_refundable"])
			}
		default:
			t.Errorf("unexpected %d %s", res.Status, res.Body)
		}
	}
	if succeeded != 10 || exceeded != 10 {
		t.Fatalf("%d refunds succeeded and %d exceeded, want 10 and 10", succeeded, exceeded)
	}
	after, _ := getPayment(t, b.client, pay.ID)
	if after.AmountRefunded != 100 || after.Status != "refunded" {
		t.Errorf("payment after refunds: amount_refunded %d, status %s", after.AmountRefunded, after.Status)
	}
	if got := b.count(t, `SELECT coalesce(sum(amount), 0) FROM refunds WHERE payment_id = $1`, pay.ID); got != 100 {
		t.Errorf("refund rows add up to %d", got)
	}
	if got := b.count(t, `SELECT count(*) FROM events WHERE type = 'refund.succeeded'`); got != 10 {
		t.Errorf("%d refund.succeeded events, want 10", got)
	}
	if got := b.count(t, `SELECT count(*) FROM idempotency_keys WHERE operation = 'refunds.create'`); got != 10 {
		t.Errorf("%d refund keys stored, want 10 (refusals are not stored)", got)
	}
}

func TestRefundIdempotency(t *testing.T) {
	t.Parallel()
	b := setup(t)
	pay, _ := createPayment(t, b.client, 100)
	key := newKey()

	first := b.client.Post("/refunds", refundOf(pay.ID, 30), apitest.Header("Idempotency-Key", key))
	if first.Status != http.StatusCreated || first.Header.Get("Location") == "" {
		t.Fatalf("%d %s", first.Status, first.Body)
	}
	replay := b.client.Post("/refunds", refundOf(pay.ID, 30), apitest.Header("Idempotency-Key", key))
	if replay.Status != http.StatusCreated || !bytes.Equal(replay.Body, first.Body) || replay.Header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("replay: %d %s", replay.Status, replay.Body)
	}
	reused := b.client.Post("/refunds", refundOf(pay.ID, 40), apitest.Header("Idempotency-Key", key))
	if reused.Status != http.StatusUnprocessableEntity || reused.Problem(t).Type != "/problems/idempotency-key-reused" {
		t.Errorf("same key, other amount: %d %s", reused.Status, reused.Body)
	}
	exceeds := b.client.Post("/refunds", refundOf(pay.ID, 71), apitest.Header("Idempotency-Key", newKey()))
	if p := exceeds.Problem(t); exceeds.Status != http.StatusUnprocessableEntity || p.Type != "/problems/refund-exceeds-payment" || p.Raw["amount_refundable"] != float64(70) {
		t.Errorf("over-refund: %d %s", exceeds.Status, exceeds.Body)
	}
	// The same key string on another operation is another key.
	if res := b.client.Post("/payments", visa(100), apitest.Header("Idempotency-Key", key)); res.Status != http.StatusCreated || res.Header.Get("Idempotent-Replayed") != "" {
		t.Errorf("the refund's key collided with a payment: %d %s", res.Status, res.Body)
	}
	after, _ := getPayment(t, b.client, pay.ID)
	if after.AmountRefunded != 30 || after.Status != "partially_refunded" {
		t.Errorf("payment: amount_refunded %d, status %s", after.AmountRefunded, after.Status)
	}
}

func TestRefundChangesThePaymentETag(t *testing.T) {
	t.Parallel()
	b := setup(t)
	pay, before := createPayment(t, b.client, 100)

	stale := b.client.Post("/refunds", refundOf(pay.ID, 10), apitest.Header("Idempotency-Key", newKey()), apitest.Header("If-Match", `"v999"`))
	if p := stale.Problem(t); stale.Status != http.StatusPreconditionFailed || p.Raw["current_etag"] != before {
		t.Fatalf("refund with a stale If-Match: %d %s", stale.Status, stale.Body)
	}
	if res := b.client.Post("/refunds", refundOf(pay.ID, 10), apitest.Header("Idempotency-Key", newKey()), apitest.Header("If-Match", before)); res.Status != http.StatusCreated {
		t.Fatalf("refund with the current If-Match: %d %s", res.Status, res.Body)
	}
	_, after := getPayment(t, b.client, pay.ID)
	if after == before {
		t.Fatalf("ETag %s unchanged by a refund", after)
	}
	res := b.client.Patch("/payments/"+pay.ID, map[string]any{"description": "x"}, apitest.Header("If-Match", before))
	if res.Status != http.StatusPreconditionFailed || res.Problem(t).Raw["current_etag"] != after {
		t.Errorf("PATCH with the pre-refund ETag: %d %s", res.Status, res.Body)
	}
}

func TestRefundDefaultsToWhatIsLeft(t *testing.T) {
	t.Parallel()
	b := setup(t)
	pay, _ := createPayment(t, b.client, 100)
	b.client.Post("/refunds", refundOf(pay.ID, 25), apitest.Header("Idempotency-Key", newKey()))

	var rest refund
	res := b.client.Post("/refunds", map[string]any{"payment_id": pay.ID, "reason": "requested_by_customer"}, apitest.Header("Idempotency-Key", newKey()))
	res.Decode(t, &rest)
	if res.Status != http.StatusCreated || rest.Amount != 75 || rest.Currency != "usd" || rest.Reason == nil || *rest.Reason != "requested_by_customer" {
		t.Fatalf("refund of the rest: %d %s", res.Status, res.Body)
	}
	if p, _ := getPayment(t, b.client, pay.ID); p.Status != "refunded" || p.AmountRefunded != 100 {
		t.Errorf("payment %+v", p)
	}
	res = b.client.Post("/refunds", map[string]any{"payment_id": pay.ID}, apitest.Header("Idempotency-Key", newKey()))
	if p := res.Problem(t); res.Status != http.StatusUnprocessableEntity || p.Raw["amount_refundable"] != float64(0) ||
		p.Detail != "The payment is already fully refunded." {
		t.Errorf("refund of a fully refunded payment: %d %s", res.Status, res.Body)
	}
}

func TestRefundRefusals(t *testing.T) {
	t.Parallel()
	b := setup(t)
	pay, _ := createPayment(t, b.client, 100)
	declined := b.client.Post("/payments", map[string]any{"amount": 100, "currency": "usd", "payment_method": processor.CardDeclined},
		apitest.Header("Idempotency-Key", newKey()))
	failedID := declined.Problem(t).Raw["payment_id"].(string)

	tests := []struct {
		name     string
		body     map[string]any
		client   *apitest.Client
		status   int
		typ      string
		extraKey string
		field    string // a field errors[] must name, when set
	}{
		{"a failed payment", refundOf(failedID, 10), b.client, http.StatusConflict, "/problems/payment-not-refundable", "payment_id", ""},
		{"an unknown payment", refundOf("pay_NOSUCHPAYMENT", 10), b.client, http.StatusBadRequest, "/problems/invalid-request", "errors", "/payment_id"},
		{"another account's payment", refundOf(pay.ID, 10), b.other, http.StatusBadRequest, "/problems/invalid-request", "errors", "/payment_id"},
		{"a zero amount", refundOf(pay.ID, 0), b.client, http.StatusBadRequest, "/problems/invalid-request", "errors", "/amount"},
		{"a negative amount", refundOf(pay.ID, -5), b.client, http.StatusBadRequest, "/problems/invalid-request", "errors", "/amount"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key := newKey()
			res := tt.client.Post("/refunds", tt.body, apitest.Header("Idempotency-Key", key))
			p := res.Problem(t)
			if res.Status != tt.status || p.Type != tt.typ {
				t.Fatalf("%d %s", res.Status, res.Body)
			}
			if _, ok := p.Raw[tt.extraKey]; tt.extraKey != "" && !ok {
				t.Errorf("problem lacks %s: %s", tt.extraKey, res.Body)
			}
			if tt.field != "" && !slices.Contains(fieldsOf(p), tt.field) {
				t.Errorf("errors name %v, want %s", fieldsOf(p), tt.field)
			}
			if got := b.count(t, `SELECT count(*) FROM idempotency_keys WHERE key = $1`, key); got != 0 {
				t.Errorf("a refused refund stored its key")
			}
		})
	}
	if got := b.count(t, `SELECT count(*) FROM refunds`); got != 0 {
		t.Errorf("%d refunds stored by refused requests", got)
	}
}

func TestReadingRefunds(t *testing.T) {
	t.Parallel()
	b := setup(t)
	pay, _ := createPayment(t, b.client, 100)
	otherPay, _ := createPayment(t, b.client, 100)
	var ids []string
	for range 5 {
		var r refund
		b.client.Post("/refunds", refundOf(pay.ID, 10), apitest.Header("Idempotency-Key", newKey())).Decode(t, &r)
		ids = append(ids, r.ID)
	}
	b.client.Post("/refunds", refundOf(otherPay.ID, 10), apitest.Header("Idempotency-Key", newKey()))

	var one refund
	b.client.Get("/refunds/"+ids[0]).Decode(t, &one)
	if one.ID != ids[0] || one.PaymentID != pay.ID || one.Status != "succeeded" {
		t.Errorf("GET refund: %+v", one)
	}
	if res := b.other.Get("/refunds/" + ids[0]); res.Status != http.StatusNotFound {
		t.Errorf("another account's refund: %d", res.Status)
	}

	// Page through this payment's refunds two at a time: newest first, each exactly once.
	var seen []string
	cursor := ""
	for page := 0; ; page++ {
		var list struct {
			Data    []refund `json:"data"`
			HasMore bool     `json:"has_more"`
		}
		b.client.Get("/refunds?limit=2&payment_id="+pay.ID+cursor).Decode(t, &list)
		for _, r := range list.Data {
			seen = append(seen, r.ID)
		}
		if !list.HasMore {
			break
		}
		cursor = "&starting_after=" + list.Data[len(list.Data)-1].ID
	}
	if len(seen) != 5 {
		t.Fatalf("listed %v", seen)
	}
	for i, id := range seen {
		if id != ids[len(ids)-1-i] {
			t.Errorf("position %d: %s, want %s (newest first)", i, id, ids[len(ids)-1-i])
		}
	}
	var all struct{ Data []refund }
	b.client.Get("/refunds?limit=100").Decode(t, &all)
	if len(all.Data) != 6 {
		t.Errorf("all refunds: %d, want 6", len(all.Data))
	}
	if res := b.other.Get("/refunds?payment_id=" + pay.ID); res.Status != http.StatusBadRequest {
		t.Errorf("filtering by another account's payment: %d %s", res.Status, res.Body)
	}
}
