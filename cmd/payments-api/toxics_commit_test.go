package main

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestLostCommitAnswer cuts the connection of a payment's transaction at its COMMIT: in
// some tries before the COMMIT reaches PostgreSQL (nothing committed), in others after
// (committed, but the answer is lost). The server cannot tell which happened, so either way
// it answers 503 with Retry-After, never 201 (it does not know the payment exists) and never
// 500 (nothing is wrong with the request). The client's retry with the same key then
// replays the committed payment or creates it: the account is charged exactly once. The
// tries go on until both outcomes were seen, at most maxTries.
func TestLostCommitAnswer(t *testing.T) {
	t.Parallel()
	const minTries, maxTries = 4, 10
	r, proxy, direct := startBehindToxics(t, map[string]string{})
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, direct)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.WithoutCancel(ctx))

	outcomes := map[bool]int{} // committed → tries
	for try := 0; try < maxTries && (try < minTries || outcomes[true] == 0 || outcomes[false] == 0); try++ {
		key := fmt.Sprintf("lost-commit-%d", try)
		committed := cutAtCommit(ctx, t, r, proxy, conn, key, try%2 == 0)
		outcomes[committed]++
	}
	t.Logf("COMMIT answer lost: %d tries committed, %d did not", outcomes[true], outcomes[false])
	if outcomes[true] == 0 || outcomes[false] == 0 {
		t.Errorf("want both outcomes: %d committed, %d not", outcomes[true], outcomes[false])
	}
}

// cutAtCommit creates a payment with key while the connection of its transaction is cut at
// the COMMIT (after PostgreSQL received it when deliver), checks the answer and the retry,
// and reports whether the first attempt had committed.
func cutAtCommit(ctx context.Context, t *testing.T, r *running, proxy *toxicProxy, conn *pgx.Conn, key string, deliver bool) bool {
	t.Helper()
	before := countPayments(ctx, t, conn)
	commitCuts.Store(key, &commitCut{deliver: deliver})
	defer commitCuts.Delete(key)
	proxy.Add("answer_drop", "downstream", map[string]any{"marker": key})
	proxy.Add("commit_watch", "upstream", map[string]any{"marker": key})
	res := send(t, r, http.MethodPost, "/payments", paymentBody, key)
	proxy.Remove()
	checkUnavailable(t, fmt.Sprintf("%s (COMMIT delivered: %t)", key, deliver), res)

	committed := countPayments(ctx, t, conn) - before
	if committed != 0 && committed != 1 {
		t.Fatalf("%s: %d payments after one attempt", key, committed)
	}
	if committed == 1 != deliver {
		t.Errorf("%s: COMMIT delivered: %t, yet committed: %t", key, deliver, committed == 1)
	}

	retry := send(t, r, http.MethodPost, "/payments", paymentBody, key)
	if retry.Status != http.StatusCreated {
		t.Errorf("%s: the retry: %d %s, want 201", key, retry.Status, retry.Body)
	}
	if replayed := retry.Header.Get("Idempotent-Replayed") == "true"; replayed != (committed == 1) {
		t.Errorf("%s: the retry replayed: %t, yet the first attempt committed: %t", key, replayed, committed == 1)
	}
	if n := countPayments(ctx, t, conn) - before; n != 1 {
		t.Errorf("%s: %d payments after the retry, want exactly 1", key, n)
	}
	return committed == 1
}

func countPayments(ctx context.Context, t *testing.T, conn *pgx.Conn) int {
	t.Helper()
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM payments").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
