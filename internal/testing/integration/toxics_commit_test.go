package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/payments-api/payments-api/internal/testing/apitest"
)

// TestLostCommitAnswer cuts the connection of a payment's transaction at its COMMIT: in
// some tries before the COMMIT reaches PostgreSQL (nothing committed), in others after
// (committed, but the answer is lost). The server cannot tell which happened, so either way
// it answers 503 with Retry-After, never 201 (it does not know the payment exists) and never
// 500 (nothing is wrong with the request). The client's retry with the same key then
// replays the committed payment or creates it (after a 409 idempotency-key-in-use while
// PostgreSQL has not yet rolled the first attempt back): the account is charged exactly
// once. The
// tries go on until both outcomes were seen, at most maxTries.
func TestLostCommitAnswer(t *testing.T) {
	t.Parallel()
	const minTries, maxTries = 4, 10
	// Tries follow one another faster than the writes quota allows.
	r, proxy, direct := startBehindToxics(t, map[string]string{"RATE_LIMIT_DISABLED": "true"})
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, direct)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.WithoutCancel(ctx))

	outcomes := map[bool]int{} // committed → tries
	waits := 0                 // retries that met the key still in use
	for try := 0; try < maxTries && (try < minTries || outcomes[true] == 0 || outcomes[false] == 0); try++ {
		key := fmt.Sprintf("lost-commit-%d", try)
		committed, inUse := cutAtCommit(ctx, t, r, proxy, conn, key, try%2 == 0)
		outcomes[committed]++
		waits += inUse
	}
	t.Logf("COMMIT answer lost: %d tries committed, %d did not; %d retries met the key still in use", outcomes[true], outcomes[false], waits)
	if outcomes[true] == 0 || outcomes[false] == 0 {
		t.Errorf("want both outcomes: %d committed, %d not", outcomes[true], outcomes[false])
	}
}

// cutAtCommit creates a payment with key while the connection of its transaction is cut at
// the COMMIT (after PostgreSQL received it when deliver), checks the answer and the retry,
// and reports whether the first attempt had committed, and how many retries met its key
// still in use.
func cutAtCommit(ctx context.Context, t *testing.T, r *Server, proxy *toxicProxy, conn *pgx.Conn, key string, deliver bool) (committed bool, inUse int) {
	t.Helper()
	before := countPayments(ctx, t, conn)
	commitCuts.Store(key, &commitCut{deliver: deliver})
	defer commitCuts.Delete(key)
	proxy.Add("answer_drop", "downstream", map[string]any{"marker": key})
	proxy.Add("commit_watch", "upstream", map[string]any{"marker": key})
	res := send(t, r, http.MethodPost, "/payments", paymentBody, key)
	proxy.Remove()
	res.WantUnavailable(t, fmt.Sprintf("%s (COMMIT delivered: %t)", key, deliver))

	first := countPayments(ctx, t, conn) - before
	if first != 0 && first != 1 {
		t.Fatalf("%s: %d payments after one attempt", key, first)
	}
	committed = first == 1
	if committed != deliver {
		t.Errorf("%s: COMMIT delivered: %t, yet committed: %t", key, deliver, committed)
	}

	retry, inUse := retryWhileInUse(t, r, key)
	if retry.Status != http.StatusCreated {
		t.Errorf("%s: the retry: %d %s, want 201", key, retry.Status, retry.Body)
	}
	if replayed := retry.Header.Get("Idempotent-Replayed") == "true"; replayed != committed {
		t.Errorf("%s: the retry replayed: %t, yet the first attempt committed: %t", key, replayed, committed)
	}
	if n := countPayments(ctx, t, conn) - before; n != 1 {
		t.Errorf("%s: %d payments after the retry, want exactly 1", key, n)
	}
	return committed, inUse
}

// retryWhileInUse sends the payment again with key until the answer is not 409
// idempotency-key-in-use, for at most 5 s. The first attempt's transaction may still hold
// the key: PostgreSQL rolls it back only once it notices its client left, which can be
// after the client heard of the loss. The 409 says so, with Retry-After; the test retries
// sooner, to stay short.
// It returns the last answer and how many 409s came before it.
func retryWhileInUse(t *testing.T, r *Server, key string) (res *apitest.Response, inUse int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		res = send(t, r, http.MethodPost, "/payments", paymentBody, key)
		if res.Status != http.StatusConflict || time.Now().After(deadline) {
			return res, inUse
		}
		var p struct{ Type string }
		_ = json.Unmarshal(res.Body, &p)
		if p.Type != "/problems/idempotency-key-in-use" || res.Header.Get("Retry-After") == "" {
			t.Errorf("%s: the retry: 409 %s (Retry-After %q), want idempotency-key-in-use with Retry-After", key, res.Body, res.Header.Get("Retry-After"))
			return res, inUse
		}
		inUse++
		time.Sleep(50 * time.Millisecond)
	}
}

func countPayments(ctx context.Context, t *testing.T, conn *pgx.Conn) int {
	t.Helper()
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM payments").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
