package handlers_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/payments-api/payments-api/internal/app"
	"github.com/payments-api/payments-api/internal/testing/apitest"
)

// TestACommitOutlivingItsRequestIsNotCancelled: a COMMIT that waits past the request's
// deadline (for a synchronous standby, in production) goes on waiting. Cancelled, it would
// commit on the primary alone, and a failover would lose a payment whose retry had replayed
// it. Here a deferred trigger makes COMMIT wait on a lock the test holds: the request answers
// 503 at its deadline, a retry meets the key still claimed (409), and once the lock is let go
// the payment commits and the next retry replays it.
func TestACommitOutlivingItsRequestIsNotCancelled(t *testing.T) {
	t.Parallel()
	b := setup(t, withConfig(func(c *app.Config) { c.RequestTimeout = time.Second })) // statement_timeout too
	ctx := t.Context()
	if _, err := b.pool.Exec(ctx, `
		CREATE FUNCTION wait_for_the_test() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			PERFORM pg_advisory_lock_shared(4242, 4242);
			PERFORM pg_advisory_unlock_shared(4242, 4242);
			RETURN NULL;
		END $$;
		CREATE CONSTRAINT TRIGGER wait_for_the_test AFTER INSERT ON payments
			DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION wait_for_the_test();`); err != nil {
		t.Fatal(err)
	}
	hold, err := b.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Release()
	if _, err := hold.Exec(ctx, `SELECT pg_advisory_lock(4242, 4242)`); err != nil {
		t.Fatal(err)
	}

	key := apitest.Header("Idempotency-Key", newKey())
	create := func() *apitest.Response { return b.client.Post("/payments", visa(5000), key) }
	if res := create(); res.Status != http.StatusServiceUnavailable {
		t.Fatalf("a create whose COMMIT outlives its deadline: %d %s, want 503", res.Status, res.Body)
	}
	if res := create(); res.Status != http.StatusConflict || res.Problem(t).Type != "/problems/idempotency-key-in-use" {
		t.Fatalf("its retry while COMMIT waits: %d %s, want 409: the first is still committing", res.Status, res.Body)
	}
	if _, err := hold.Exec(ctx, `SELECT pg_advisory_unlock(4242, 4242)`); err != nil {
		t.Fatal(err)
	}
	var res *apitest.Response
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if res = create(); res.Status != http.StatusConflict {
			break
		}
	}
	if res.Status != http.StatusCreated || res.Header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("the retry once COMMIT is answered: %d replayed=%q %s, want the first create replayed",
			res.Status, res.Header.Get("Idempotent-Replayed"), res.Body)
	}
	if n := b.count(t, `SELECT count(*) FROM payments`); n != 1 {
		t.Errorf("%d payments, want 1", n)
	}
}
