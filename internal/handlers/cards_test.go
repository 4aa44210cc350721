package handlers_test

import (
	"bytes"
	"net/http"
	"testing"
	"time"

	"github.com/payments-api/payments-api/internal/processor"
	"github.com/payments-api/payments-api/internal/testing/apitest"
)

// TestDeclineCards: each declining card answers 402 naming the payment and its failure
// code, the payment is stored as failed, and the 402 is replayed like a 201.
func TestDeclineCards(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for card, code := range map[string]string{
		processor.CardExpired:      "expired_card",
		processor.CardIncorrectCVC: "incorrect_cvc",
		processor.CardFraudulent:   "fraudulent",
	} {
		key, body := newKey(), map[string]any{"amount": 100, "currency": "usd", "payment_method": card}
		res := b.client.Post("/payments", body, apitest.Header("Idempotency-Key", key))
		p := res.Problem(t)
		if res.Status != http.StatusPaymentRequired || p.Type != "/problems/payment-declined" || p.Raw["failure_code"] != code {
			t.Errorf("%s: %d %s failure_code %v, want 402 payment-declined %s", card, res.Status, p.Type, p.Raw["failure_code"], code)
			continue
		}
		stored, _ := getPayment(t, b.client, p.Raw["payment_id"].(string))
		if stored.Status != "failed" || stored.FailureCode == nil || *stored.FailureCode != code {
			t.Errorf("%s: stored %+v, want failed with %s", card, stored, code)
		}
		replay := b.client.Post("/payments", body, apitest.Header("Idempotency-Key", key))
		if replay.Status != http.StatusPaymentRequired || replay.Header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(replay.Body, res.Body) {
			t.Errorf("%s: replay %d %s", card, replay.Status, replay.Body)
		}
	}
}

// TestSlowCardShowsTheInFlightConflict: pm_card_slow succeeds after the processor's latency
// plus 2 s; a retry sent while it charges (its key's lock held) is a prompt 409.
func TestSlowCardShowsTheInFlightConflict(t *testing.T) {
	t.Parallel()
	b := setup(t)
	key, body := newKey(), map[string]any{"amount": 100, "currency": "usd", "payment_method": processor.CardSlow}
	start := time.Now()
	first := make(chan *apitest.Response, 1)
	go func() { first <- b.client.Post("/payments", body, apitest.Header("Idempotency-Key", key)) }()
	waitUntil(t, func() bool {
		// This test's database only: other packages' tests hold advisory locks of their own.
		return b.count(t, `SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted
			AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`) > 0
	})

	retry := b.client.Post("/payments", body, apitest.Header("Idempotency-Key", key))
	if retry.Status != http.StatusConflict || retry.Problem(t).Type != "/problems/idempotency-key-in-use" {
		t.Errorf("retry while charging: %d %s, want 409 idempotency-key-in-use", retry.Status, retry.Body)
	}
	res := <-first
	if res.Status != http.StatusCreated {
		t.Fatalf("slow card: %d %s", res.Status, res.Body)
	}
	if took := time.Since(start); took < processor.SlowCardDelay {
		t.Errorf("answered after %s, before the card's %s", took, processor.SlowCardDelay)
	}
}
