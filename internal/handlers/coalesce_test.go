package handlers_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/payments-api/payments-api/internal/testing/apitest"
)

// TestReadsArrivingTogetherEachGetTheirOwnAnswer holds the payments table while GETs arrive
// at once: plain reads, current and stale If-None-Match, another account's payment, a
// payment that does not exist. The first of each kind is held in PostgreSQL, and those that
// reach the server before the lock is released queue behind it to share the next statement
// (db.Coalescer). Released, each gets its own answer, as it would alone, and the answer holds
// to the spec. That queued reads share one statement is proven in internal/db
// (TestReadsQueuedBehindAStatementShareTheNext), where the test sees them queue; here how
// many shared is only logged.
func TestReadsArrivingTogetherEachGetTheirOwnAnswer(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	type payment struct{ id, etag string }
	var mine []payment
	for range 4 {
		p, etag := createPayment(t, b.client, 1000)
		mine = append(mine, payment{p.ID, etag})
	}
	theirs, _ := createPayment(t, b.other, 1000)

	type probe struct {
		client      *apitest.Client
		id          string
		ifNoneMatch string
		status      int
	}
	var probes []probe
	for _, p := range mine {
		probes = append(probes,
			probe{b.client, p.id, "", http.StatusOK},
			probe{b.client, p.id, p.etag, http.StatusNotModified},
			probe{b.client, p.id, `"stale"`, http.StatusOK},
			probe{b.other, p.id, "", http.StatusNotFound},
			probe{b.other, p.id, p.etag, http.StatusNotFound},
		)
	}
	probes = append(probes,
		probe{b.other, theirs.ID, "", http.StatusOK},
		probe{b.client, theirs.ID, "", http.StatusNotFound},
		probe{b.client, "pay_none", "", http.StatusNotFound},
	)

	lock, err := b.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Rollback(ctx) //nolint:errcheck // released below; a second rollback is a no-op
	if _, err := lock.Exec(ctx, `LOCK TABLE payments IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	answers := make([]*apitest.Response, len(probes))
	var wg sync.WaitGroup
	for i, p := range probes {
		wg.Go(func() {
			var opts []apitest.Option
			if p.ifNoneMatch != "" {
				opts = append(opts, apitest.Header("If-None-Match", p.ifNoneMatch))
			}
			answers[i] = p.client.Get("/payments/"+p.id, opts...)
		})
	}
	// The first read of each kind, a payment's row and a payment's version, is sent alone and
	// waits for the lock.
	waitUntilBlocked(t, b.pool, "name: PaymentGetByID ")
	waitUntilBlocked(t, b.pool, "name: PaymentVersion ")
	if err := lock.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()

	coalesced := 0
	for i, p := range probes {
		res := answers[i]
		if res.Status != p.status {
			t.Errorf("GET %s (If-None-Match %q) as %s: %d, want %d: %s", p.id, p.ifNoneMatch, keyName(b, p.client), res.Status, p.status, res.Body)
			continue
		}
		if p.status == http.StatusOK {
			var got struct{ ID string }
			res.Decode(t, &got)
			if got.ID != p.id {
				t.Errorf("GET %s answered payment %s", p.id, got.ID)
			}
		}
		if strings.Contains(res.Header.Get("Server-Timing"), "coalesce;") {
			coalesced++
		}
	}
	t.Logf("%d of %d reads shared a statement", coalesced, len(probes))
}

// keyName says which of the test's accounts c is.
func keyName(b *testBundle, c *apitest.Client) string {
	if c == b.other {
		return "the other account"
	}
	return "the payments' account"
}
