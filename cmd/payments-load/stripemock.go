package main

import (
	"context"
	"net/http"
)

// stripe-mock (github.com/stripe/stripe-mock) is Stripe's own mock of its API: it checks a
// request against Stripe's OpenAPI spec and answers fixture data, storing nothing. Run
// beside the server (-stripe-mock-url), get and create are measured against their
// equivalents in Stripe's API, in the same alternating slices as the SQL baselines and the
// floor: the ratio compares the server, which keeps every payment and key, with a server of
// Stripe's API that keeps none.
type stripeMock struct {
	c *client
}

// stripeMockKey is the key sent to stripe-mock, which takes any test key of exactly three
// parts (sk_test_<word>); -key need not be one.
const stripeMockKey = "sk_test_payments"

// stripeMockCreateBody is createBody as Stripe takes it: form-encoded, not JSON.
const stripeMockCreateBody = "amount=2500&currency=usd&payment_method=pm_card_visa"

// newStripeMock is stripe-mock at url, or nil when url is empty.
func newStripeMock(url string, conns int) *stripeMock {
	if url == "" {
		return nil
	}
	return &stripeMock{c: newClient(url, stripeMockKey, conns)}
}

// workload is the scenario's request as sent to stripe-mock, or nil when it has none.
func (sm *stripeMock) workload(name string) workload {
	if sm == nil {
		return nil
	}
	switch name {
	case "get":
		return sm.get
	case "create":
		return sm.create
	}
	return nil
}

// get reads one payment intent. stripe-mock answers any id with its fixture.
func (sm *stripeMock) get(ctx context.Context, _, _ int) error {
	_, err := sm.c.expect(ctx, http.StatusOK, http.MethodGet, "/v1/payment_intents/pi_payments_load", "", nil)
	return err
}

// create makes a payment intent with a new key. Stripe answers a create 200, not 201.
func (sm *stripeMock) create(ctx context.Context, _, _ int) error {
	_, err := sm.c.expect(ctx, http.StatusOK, http.MethodPost, "/v1/payment_intents", stripeMockCreateBody, map[string]string{
		"Content-Type":    "application/x-www-form-urlencoded", // replaces do's JSON type
		"Idempotency-Key": sm.c.key("stripe-mock"),
	})
	return err
}

// close drops the stripe-mock client's idle connections.
func (sm *stripeMock) close() {
	if sm != nil {
		sm.c.http.CloseIdleConnections()
	}
}
