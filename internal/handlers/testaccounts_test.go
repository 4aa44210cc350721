package handlers_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/payments-api/payments-api/internal/app"
	"github.com/payments-api/payments-api/internal/db"
	"github.com/payments-api/payments-api/internal/processor"
	"github.com/payments-api/payments-api/internal/ratelimit"
	"github.com/payments-api/payments-api/internal/testing/apitest"
)

// throwaway creates an account with POST /test/accounts and returns a client with its key
// and its id.
func throwaway(t *testing.T, c *apitest.Client) (*apitest.Client, string) {
	t.Helper()
	res := c.Post("/test/accounts", nil, apitest.NoAuth())
	if res.Status != http.StatusCreated {
		t.Fatalf("create test account: %d %s", res.Status, res.Body)
	}
	var acct struct {
		AccountID string `json:"account_id"`
		APIKey    string `json:"api_key"`
	}
	res.Decode(t, &acct)
	return c.WithKey(acct.APIKey), acct.AccountID
}

// TestThrowawayAccountsAreIsolated: two throwaway accounts see only their own data.
func TestThrowawayAccountsAreIsolated(t *testing.T) {
	t.Parallel()
	b := setup(t)
	one, oneID := throwaway(t, b.client)
	two, twoID := throwaway(t, b.client)
	if oneID == twoID {
		t.Fatal("two throwaway accounts share an id")
	}
	p, _ := createPayment(t, one, 500)
	if res := two.Get("/payments/" + p.ID); res.Status != http.StatusNotFound {
		t.Errorf("another account's payment: %d, want 404", res.Status)
	}
	var page struct{ Data []payment }
	two.Get("/payments").Decode(t, &page)
	if len(page.Data) != 0 {
		t.Errorf("the other account lists %d payments", len(page.Data))
	}
	var account struct{ ID string }
	one.Get("/account").Decode(t, &account)
	if account.ID != oneID {
		t.Errorf("GET /account: %s, want %s", account.ID, oneID)
	}
}

// accountTables lists every table with an account_id column, from the schema itself, so a
// table added later is checked without anyone remembering to list it.
func accountTables(t *testing.T, b *testBundle) []string {
	t.Helper()
	rows, err := b.pool.Query(context.Background(), `SELECT table_name FROM information_schema.columns
		WHERE column_name = 'account_id' AND table_schema = current_schema() ORDER BY table_name`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var tables []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			t.Fatal(err)
		}
		tables = append(tables, name)
	}
	if err := rows.Err(); err != nil || len(tables) < 7 {
		t.Fatalf("tables with account_id: %v, %v", tables, err)
	}
	return tables
}

// fillAccount gives an account a row in every kind of table: a payment with a refund, a
// declined payment, events, an endpoint with deliveries and an attempt, idempotency keys,
// a finished report job (workers must run) with its report, and a queued one.
func fillAccount(t *testing.T, b *testBundle, c *apitest.Client) {
	t.Helper()
	built := requestReport(t, c, reportBody("payments", "csv"))
	waitForJob(t, c, built.ID, "succeeded")
	e, _ := createEndpoint(t, c, publicURL, "*")
	p, _ := createPayment(t, c, 900)
	c.Post("/refunds", refundOf(p.ID, 100), apitest.Header("Idempotency-Key", newKey()))
	c.Post("/payments", map[string]any{"amount": 1, "currency": "usd", "payment_method": processor.CardFraudulent},
		apitest.Header("Idempotency-Key", newKey()))
	_, err := b.pool.Exec(context.Background(), `INSERT INTO webhook_attempts (account_id, delivery_id, attempt, attempted_at, duration_ms, response_status)
		SELECT account_id, id, 1, now(), 12, 500 FROM webhook_deliveries WHERE endpoint_id = $1`, e.ID)
	if err != nil {
		t.Fatal(err)
	}
}

// TestDeleteAccountRemovesAllItsDataAndNothingElse: after DELETE /account, no table holds a
// row of the account, the other account keeps every row, and the key answers 401 at once
// (this server's key cache forgets it).
func TestDeleteAccountRemovesAllItsDataAndNothingElse(t *testing.T) {
	t.Parallel()
	b := setup(t)
	startWorkers(t, b.pool, 100)
	doomed, doomedID := throwaway(t, b.client)
	kept, keptID := throwaway(t, b.client)
	fillAccount(t, b, doomed)
	fillAccount(t, b, kept)
	attempts := `SELECT count(*) FROM webhook_attempts JOIN webhook_deliveries d ON d.id = delivery_id WHERE d.account_id = $1`
	tables := accountTables(t, b)
	before := map[string]int{}
	for _, table := range tables {
		before[table] = b.count(t, `SELECT count(*) FROM `+table+` WHERE account_id = $1`, keptID)
		if n := b.count(t, `SELECT count(*) FROM `+table+` WHERE account_id = $1`, doomedID); n == 0 && table != "accounts" {
			t.Errorf("%s holds no row of the account before the deletion: fillAccount must fill it", table)
		}
	}
	keptAttempts := b.count(t, attempts, keptID)

	if res := doomed.Get("/account"); res.Status != http.StatusOK { // now in the key cache
		t.Fatalf("GET /account: %d", res.Status)
	}
	if res := doomed.Do(http.MethodDelete, "/account", nil); res.Status != http.StatusNoContent {
		t.Fatalf("DELETE /account: %d %s", res.Status, res.Body)
	}
	if res := doomed.Get("/account"); res.Status != http.StatusUnauthorized {
		t.Errorf("the deleted account's key: %d, want 401 at once", res.Status)
	}
	for _, table := range tables {
		if n := b.count(t, `SELECT count(*) FROM `+table+` WHERE account_id = $1`, doomedID); n != 0 {
			t.Errorf("%s: %d rows of the deleted account", table, n)
		}
		if n := b.count(t, `SELECT count(*) FROM `+table+` WHERE account_id = $1`, keptID); n != before[table] {
			t.Errorf("%s: %d rows of the other account, had %d", table, n, before[table])
		}
	}
	if n := b.count(t, `SELECT count(*) FROM accounts WHERE id = $1`, doomedID); n != 0 {
		t.Errorf("the account row is still there")
	}
	if n := b.count(t, `SELECT count(*) FROM webhook_attempts WHERE delivery_id NOT IN (SELECT id FROM webhook_deliveries)`); n != 0 {
		t.Errorf("%d attempts left without their delivery", n)
	}
	if n := b.count(t, attempts, keptID); n != keptAttempts || n == 0 {
		t.Errorf("the other account has %d attempts, had %d", n, keptAttempts)
	}
	if res := kept.Get("/account"); res.Status != http.StatusOK {
		t.Errorf("the other account: %d", res.Status)
	}
}

// TestTestAccountsLimitsAndSwitch: accounts are limited per client address, and
// OPEN_TEST_ACCOUNTS=false turns the operation into a 404.
func TestTestAccountsLimitsAndSwitch(t *testing.T) {
	t.Parallel()
	limits := generousLimits()
	limits.TestAccounts = ratelimit.Policy{Name: "test_accounts", Rate: ratelimit.Rate{Quota: 2, Window: time.Minute}}
	b := setup(t, withLimits(limits))
	for i := range 3 {
		res := b.client.Post("/test/accounts", nil, apitest.NoAuth())
		want := http.StatusCreated
		if i == 2 {
			want = http.StatusTooManyRequests
		}
		if res.Status != want {
			t.Fatalf("account %d: %d, want %d", i+1, res.Status, want)
		}
		if policies, _ := rateLimitHeaders(t, res); policies["test_accounts"]["q"] != 2 {
			t.Errorf("RateLimit-Policy %v, want test_accounts with q=2", policies)
		}
	}

	closed := setup(t, withConfig(func(c *app.Config) { c.OpenTestAccounts = false })).client.WithKey("")
	if res := closed.Post("/test/accounts", nil); res.Status != http.StatusNotFound {
		t.Errorf("with OPEN_TEST_ACCOUNTS=false: %d, want 404", res.Status)
	}
	if res := unreachableDatabase(t).Post("/test/accounts", nil, apitest.NoAuth()); res.Status != http.StatusServiceUnavailable {
		t.Errorf("with the database down: %d, want 503", res.Status)
	}
}

// TestHelpersActOnTheCallersAccountOnly: expiring keys frees them for new requests, and
// making retries due moves the schedule, only in the caller's account.
func TestHelpersActOnTheCallersAccountOnly(t *testing.T) {
	t.Parallel()
	b := setup(t)
	key := newKey()
	for _, c := range []*apitest.Client{b.client, b.other} {
		c.Post("/payments", visa(100), apitest.Header("Idempotency-Key", key))
		createEndpoint(t, c, publicURL, "*")
	}
	createPayment(t, b.client, 300) // an event, and its deliveries
	createPayment(t, b.other, 300)
	// As after a failed attempt: the delivery waits an hour, its job snoozed until then.
	if _, err := b.pool.Exec(context.Background(), `UPDATE webhook_deliveries SET next_attempt_at = now() + interval '1 hour'`); err != nil {
		t.Fatal(err)
	}
	_, err := b.pool.Exec(context.Background(), `UPDATE river_job SET state = 'scheduled', scheduled_at = now() + interval '1 hour' WHERE kind = 'webhook.deliver'`)
	if err != nil {
		t.Fatal(err)
	}

	var result struct{ Affected int }
	b.client.Post("/test/idempotency-keys/expire", nil).Decode(t, &result)
	if result.Affected != 2 {
		t.Errorf("expired %d keys, want the caller's 2", result.Affected)
	}
	if res := b.client.Post("/payments", visa(999), apitest.Header("Idempotency-Key", key)); res.Status != http.StatusCreated || res.Header.Get("Idempotent-Replayed") != "" {
		t.Errorf("an expired key with another body: %d, want a new 201", res.Status)
	}
	if res := b.other.Post("/payments", visa(999), apitest.Header("Idempotency-Key", key)); res.Status != http.StatusUnprocessableEntity {
		t.Errorf("the other account's key with another body: %d, want 422 (still alive)", res.Status)
	}

	// The caller's pending deliveries: the one waiting an hour, and the new payment's (the
	// endpoint came after the first payment).
	b.client.Post("/test/webhook-deliveries/retry-now", nil).Decode(t, &result)
	if result.Affected != 2 {
		t.Errorf("made %d deliveries due, want the caller's 2", result.Affected)
	}
	later := `SELECT count(*) FROM webhook_deliveries WHERE account_id = $1 AND next_attempt_at > now()`
	if n := b.count(t, later, accountOf(t, b.client)); n != 0 {
		t.Errorf("%d of the caller's deliveries still wait", n)
	}
	if n := b.count(t, later, accountOf(t, b.other)); n != 1 {
		t.Errorf("%d of the other account's deliveries wait, want 1", n)
	}
	jobWaits := `SELECT count(*) FROM river_job j JOIN webhook_deliveries d ON d.id = j.args->>'delivery_id'
		WHERE d.account_id = $1 AND (j.state <> 'available' OR j.scheduled_at > now())`
	if n := b.count(t, jobWaits, accountOf(t, b.client)); n != 0 {
		t.Errorf("%d of the caller's delivery jobs still wait", n)
	}
	if n := b.count(t, jobWaits, accountOf(t, b.other)); n != 1 {
		t.Errorf("%d of the other account's delivery jobs wait, want 1", n)
	}

	// An attempt that was running during the call finishes after it and snoozes its job to the
	// schedule, while its delivery already says "due now": a second call must still find it.
	_, err = b.pool.Exec(context.Background(), `UPDATE river_job j SET state = 'scheduled', scheduled_at = now() + interval '1 hour'
		FROM webhook_deliveries d WHERE d.id = j.args->>'delivery_id' AND d.account_id = $1`, accountOf(t, b.client))
	if err != nil {
		t.Fatal(err)
	}
	b.client.Post("/test/webhook-deliveries/retry-now", nil)
	if n := b.count(t, jobWaits, accountOf(t, b.client)); n != 0 {
		t.Errorf("after asking again, %d of the caller's delivery jobs still wait", n)
	}
}

func accountOf(t *testing.T, c *apitest.Client) string {
	t.Helper()
	var a struct{ ID string }
	c.Get("/account").Decode(t, &a)
	return a.ID
}

// TestRunJobsNowMakesTheCallersJobsDue: a report job waiting in the queue (here scheduled an
// hour ahead, as after a failed attempt) is due at once, the other account's is not, and a
// sweep is queued.
func TestRunJobsNowMakesTheCallersJobsDue(t *testing.T) {
	t.Parallel()
	b := setup(t)
	mine := requestReport(t, b.client, reportBody("payments", "json"))
	theirs := requestReport(t, b.other, reportBody("payments", "json"))
	_, err := b.pool.Exec(context.Background(), `UPDATE river_job SET state = 'scheduled', scheduled_at = now() + interval '1 hour'`)
	if err != nil {
		t.Fatal(err)
	}
	var result struct{ Affected int }
	b.client.Post("/test/jobs/run-now", nil).Decode(t, &result)
	if result.Affected != 1 {
		t.Errorf("made %d jobs due, want the caller's 1", result.Affected)
	}
	waiting := `SELECT count(*) FROM river_job r JOIN jobs j ON j.river_job_id = r.id
		WHERE j.id = $1 AND (r.state <> 'available' OR r.scheduled_at > now())`
	if n := b.count(t, waiting, mine.ID); n != 0 {
		t.Errorf("the caller's job still waits")
	}
	if n := b.count(t, waiting, theirs.ID); n != 1 {
		t.Errorf("the other account's job was made due")
	}
	if n := b.count(t, `SELECT count(*) FROM river_job WHERE kind = 'sweep' AND state = 'available'`); n != 1 {
		t.Errorf("%d sweeps queued, want 1", n)
	}
}

// TestDeletingADeletedAccountIs401: a second DELETE /account, sent to a process that still
// has the key cached (within API_KEY_CACHE_TTL), answers 401 like every request with that key
// from then on, not a 404 the operation does not document.
func TestDeletingADeletedAccountIs401(t *testing.T) {
	t.Parallel()
	b := setup(t)
	other := b.secondInstance(t)
	res := b.client.Post("/test/accounts", nil, apitest.NoAuth())
	if res.Status != http.StatusCreated {
		t.Fatalf("create test account: %d %s", res.Status, res.Body)
	}
	var acct struct {
		APIKey string `json:"api_key"`
	}
	res.Decode(t, &acct)
	here, there := b.client.WithKey(acct.APIKey), other.client.WithKey(acct.APIKey)
	if res := there.Get("/account"); res.Status != http.StatusOK { // now in that process's key cache
		t.Fatalf("GET /account: %d", res.Status)
	}
	if res := here.Do(http.MethodDelete, "/account", nil); res.Status != http.StatusNoContent {
		t.Fatalf("DELETE /account: %d %s", res.Status, res.Body)
	}
	if res := there.Do(http.MethodDelete, "/account", nil); res.Status != http.StatusUnauthorized {
		t.Errorf("DELETE /account again, elsewhere: %d %s, want 401", res.Status, res.Body)
	}
}

// TestACreateWhoseAccountIsDeletedMeanwhileAnswers401: a create's rows go with its COMMIT,
// so DELETE /account does not wait for a create still charging, and the create's COMMIT then
// finds no account. It answers 401, as its retry does, having recorded nothing; not a 500.
func TestACreateWhoseAccountIsDeletedMeanwhileAnswers401(t *testing.T) {
	t.Parallel()
	gate := newGatedProcessor()
	b := setup(t, withProcessor(gate))
	t.Cleanup(gate.open) // before the server closes: Close waits for the held request
	doomed, doomedID := throwaway(t, b.client)
	created := make(chan *apitest.Response, 1)
	go func() { created <- doomed.Post("/payments", visa(100), apitest.Header("Idempotency-Key", newKey())) }()
	gate.waitCharging(t)
	if res := doomed.Do(http.MethodDelete, "/account", nil); res.Status != http.StatusNoContent {
		t.Fatalf("DELETE /account: %d %s", res.Status, res.Body)
	}
	gate.open()
	res := <-created
	if res.Status != http.StatusUnauthorized || res.Problem(t).Type != "/problems/unauthorized" || res.Header.Get("WWW-Authenticate") == "" {
		t.Errorf("the create: %d %s, want a 401 problem with its challenge", res.Status, res.Body)
	}
	if n := b.count(t, `SELECT count(*) FROM payments WHERE account_id = $1`, doomedID); n != 0 {
		t.Errorf("%d payments of the deleted account", n)
	}
	if strings.Contains(b.logs.String(), `"level":"ERROR"`) {
		t.Errorf("logged as an internal error:\n%s", b.logs.String())
	}
}

// TestARefundAndItsAccountsDeletionTakeTurns: a refund locks its payment's row and then
// references the account (its foreign key); DELETE /account locks the account's payments
// before the account's row, so it waits for the refund instead of holding what the refund
// needs. The test holds the payment's row until both wait for it, then lets go: the refund,
// first in line, commits, then the deletion. Were the account's row locked first, each would
// wait for the other and PostgreSQL would roll one back (a 503).
func TestARefundAndItsAccountsDeletionTakeTurns(t *testing.T) {
	t.Parallel()
	b := setup(t)
	doomed, _ := throwaway(t, b.client)
	pay, _ := createPayment(t, doomed, 100)

	release := b.lockPayment(t, pay.ID)
	refunded := make(chan *apitest.Response, 1)
	go func() {
		refunded <- doomed.Post("/refunds", refundOf(pay.ID, 10), apitest.Header("Idempotency-Key", newKey()))
	}()
	b.waitUntilBlocked(t, 1)
	deleted := make(chan *apitest.Response, 1)
	go func() { deleted <- doomed.Do(http.MethodDelete, "/account", nil) }()
	b.waitUntilBlocked(t, 2) // the deletion waits for the payment's row too
	release()

	if res := <-refunded; res.Status != http.StatusCreated {
		t.Errorf("the refund: %d %s, want 201", res.Status, res.Body)
	}
	if res := <-deleted; res.Status != http.StatusNoContent {
		t.Errorf("the deletion: %d %s, want 204", res.Status, res.Body)
	}
}

// TestADeadlockAnswers503: a request that PostgreSQL rolls back to break a deadlock answers
// 503 with Retry-After, as anything a retry may get through does. The server's transactions
// take their locks in an order that makes none, so the test makes one with a refund: it
// locks the account's row, which the refund's inserts reference at its commit, lets the
// refund lock its payment and wait for the account, and then asks for the payment's row.
// The refund began to wait first, so its deadlock check (deadlock_timeout after that) is the
// first to find the cycle, and it is the one rolled back. Should the test's own transaction
// be rolled back instead (its wait began a whole deadlock_timeout later), it tries again.
func TestADeadlockAnswers503(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	for try := 1; ; try++ {
		pay, _ := createPayment(t, b.client, 100)
		conn, err := pgx.Connect(ctx, b.dbURL)
		if err != nil {
			t.Fatal(err)
		}
		tx, err := conn.Begin(ctx)
		if err == nil {
			_, err = tx.Exec(ctx, `SELECT 1 FROM accounts WHERE id = (SELECT account_id FROM payments WHERE id = $1) FOR UPDATE`, pay.ID)
		}
		if err != nil {
			t.Fatal(err)
		}
		refunded := make(chan *apitest.Response, 1)
		go func() {
			refunded <- b.client.Post("/refunds", refundOf(pay.ID, 10), apitest.Header("Idempotency-Key", newKey()))
		}()
		b.waitUntilBlocked(t, 1) // the refund holds its payment and waits for the account
		_, lockErr := tx.Exec(ctx, `SELECT 1 FROM payments WHERE id = $1 FOR UPDATE`, pay.ID)
		_ = conn.Close(ctx) // ends the transaction, and with it the wait of a refund not rolled back
		res := <-refunded
		if db.IsRolledBack(lockErr) && try < 3 {
			t.Logf("try %d: the test's transaction was the one rolled back (the refund answered %d)", try, res.Status)
			continue
		}
		if lockErr != nil {
			t.Fatalf("the test's side of the deadlock: %v", lockErr)
		}
		if p := res.Problem(t); res.Status != http.StatusServiceUnavailable || p.Type != "/problems/service-unavailable" || res.Header.Get("Retry-After") == "" {
			t.Errorf("the refund rolled back: %d %s, want a 503 service-unavailable problem with Retry-After", res.Status, res.Body)
		}
		return
	}
}

// TestAReportAndItsAccountsDeletionTakeTurns: a report's last page locks its job and then
// inserts the report and its event, which reference the account; DELETE /account locks the
// account's jobs before the account's row, so the two take turns, as a refund and the
// deletion do. The test holds the report chunks' table until the build, having locked its
// job, waits to write its page, and the deletion waits for the job: the report is finished
// first, then the account deleted, and neither is rolled back.
func TestAReportAndItsAccountsDeletionTakeTurns(t *testing.T) {
	t.Parallel()
	b := setup(t, withConfig(func(c *app.Config) { c.Work = true }))
	doomed, _ := throwaway(t, b.client)
	createPayment(t, doomed, 100)

	release := b.holdLocks(t, `LOCK TABLE report_chunks IN EXCLUSIVE MODE`)
	j := requestReport(t, doomed, reportBody("payments", "csv"))
	b.waitUntilStatementBlocked(t, "INSERT INTO report_chunks") // the build holds its job
	deleted := make(chan *apitest.Response, 1)
	go func() { deleted <- doomed.Do(http.MethodDelete, "/account", nil) }()
	b.waitUntilStatementBlocked(t, "FROM jobs") // the deletion waits for the job's row
	release()

	if res := <-deleted; res.Status != http.StatusNoContent {
		t.Errorf("the deletion: %d %s, want 204", res.Status, res.Body)
	}
	b.waitUntil(t, "the build's job to end", func(int) bool {
		return b.count(t, `SELECT count(*) FROM river_job WHERE args->>'job_id' = $1 AND finalized_at IS NOT NULL`, j.ID) == 1
	})
	if n := b.count(t, `SELECT count(*) FROM river_job WHERE args->>'job_id' = $1 AND state = 'completed' AND attempt = 1`, j.ID); n != 1 {
		t.Errorf("the build did not complete in its first attempt:\n%s", b.logs.String())
	}
}

// TestAWriteWaitingOnItsAccountsDeletionAnswers401: DELETE /account, first in line for a
// payment's row, deletes the payment that a refund and a PATCH then find gone. Each answers
// the 401 its retry would get (the key went with the account), as a create whose COMMIT meets
// the deletion does, not a 400 or 404 that blames the payment's id; nothing of either is
// recorded, and nothing is logged as an internal error.
func TestAWriteWaitingOnItsAccountsDeletionAnswers401(t *testing.T) {
	t.Parallel()
	b := setup(t)
	doomed, doomedID := throwaway(t, b.client)
	pay, etag := createPayment(t, doomed, 100)

	release := b.lockPayment(t, pay.ID)
	deleted := make(chan *apitest.Response, 1)
	go func() { deleted <- doomed.Do(http.MethodDelete, "/account", nil) }()
	b.waitUntilBlocked(t, 1)
	b.writesBehindDeletion(t, deleted, release, doomedID, map[string]func() *apitest.Response{
		"the refund": func() *apitest.Response {
			return doomed.Post("/refunds", refundOf(pay.ID, 10), apitest.Header("Idempotency-Key", newKey()))
		},
		"the PATCH": func() *apitest.Response {
			return doomed.Patch("/payments/"+pay.ID, map[string]any{"description": "late"}, apitest.Header("If-Match", etag))
		},
	}, "refunds", "idempotency_keys", "events", "payments")
}

// TestAnEndpointOrJobWriteWaitingOnItsAccountsDeletionAnswers401: as a refund or a PATCH of a
// payment does, a PATCH, DELETE (with and without If-Match) or rotation of a webhook endpoint,
// and a job's cancel, that waited for the row DELETE /account then removed answer the 401
// their retries would get, not a 404 that blames the id. The test holds the account's events,
// which the deletion removes after its endpoints and jobs: it waits there with those rows
// deleted and locked, and each write queues behind it.
func TestAnEndpointOrJobWriteWaitingOnItsAccountsDeletionAnswers401(t *testing.T) {
	t.Parallel()
	b := setup(t)
	doomed, doomedID := throwaway(t, b.client)
	patched, patchedTag := createEndpoint(t, doomed, publicURL, "payment.succeeded")
	deletedEndpoint, _ := createEndpoint(t, doomed, publicURL, "payment.succeeded")
	deletedAt, deletedAtTag := createEndpoint(t, doomed, publicURL, "payment.succeeded")
	rotated, _ := createEndpoint(t, doomed, publicURL, "payment.succeeded")
	createPayment(t, doomed, 100) // an event, with a delivery to each endpoint
	queued := requestReport(t, doomed, reportBody("payments", "csv"))

	release := b.holdLocks(t, `SELECT 1 FROM events WHERE account_id = $1 FOR UPDATE`, doomedID)
	deleted := make(chan *apitest.Response, 1)
	go func() { deleted <- doomed.Do(http.MethodDelete, "/account", nil) }()
	b.waitUntilStatementBlocked(t, "DELETE FROM events")
	b.writesBehindDeletion(t, deleted, release, doomedID, map[string]func() *apitest.Response{
		"the endpoint's PATCH": func() *apitest.Response {
			return doomed.Patch("/webhook-endpoints/"+patched.ID, map[string]any{"description": "late"}, apitest.Header("If-Match", patchedTag))
		},
		"the endpoint's DELETE": func() *apitest.Response {
			return doomed.Do(http.MethodDelete, "/webhook-endpoints/"+deletedEndpoint.ID, nil)
		},
		"the endpoint's DELETE with If-Match": func() *apitest.Response {
			return doomed.Do(http.MethodDelete, "/webhook-endpoints/"+deletedAt.ID, nil, apitest.Header("If-Match", deletedAtTag))
		},
		"the rotation": func() *apitest.Response {
			return doomed.Post("/webhook-endpoints/"+rotated.ID+"/rotate-secret", nil)
		},
		"the job's cancel": func() *apitest.Response { return doomed.Do(http.MethodDelete, "/jobs/"+queued.ID, nil) },
	}, "webhook_endpoints", "webhook_deliveries", "jobs", "idempotency_keys")
}

// writesBehindDeletion sends each of writes at once, on a goroutine of its own, while the
// account's DELETE /account (whose answer deleted gives) waits for a lock release holds. It
// waits until the deletion and every write wait for a lock, releases, and checks that the
// deletion answered 204, that each write answered the 401 its retry would get (the key went
// with the account), that none of tables holds a row of the account, and that nothing was
// logged as an internal error.
func (b *testBundle) writesBehindDeletion(t *testing.T, deleted <-chan *apitest.Response, release func(), accountID string, writes map[string]func() *apitest.Response, tables ...string) {
	t.Helper()
	type answer struct {
		what string
		res  *apitest.Response
	}
	answers := make(chan answer, len(writes))
	for what, send := range writes {
		go func() { answers <- answer{what, send()} }()
	}
	b.waitUntilBlocked(t, 1+len(writes))
	release()

	if res := <-deleted; res.Status != http.StatusNoContent {
		t.Errorf("the deletion: %d %s, want 204", res.Status, res.Body)
	}
	for range writes {
		a := <-answers
		if a.res.Status != http.StatusUnauthorized || a.res.Problem(t).Type != "/problems/unauthorized" || a.res.Header.Get("WWW-Authenticate") == "" {
			t.Errorf("%s: %d %s, want a 401 problem with its challenge", a.what, a.res.Status, a.res.Body)
		}
	}
	for _, table := range tables {
		if n := b.count(t, `SELECT count(*) FROM `+table+` WHERE account_id = $1`, accountID); n != 0 {
			t.Errorf("%d rows of the deleted account in %s", n, table)
		}
	}
	if strings.Contains(b.logs.String(), `"level":"ERROR"`) {
		t.Errorf("logged as an internal error:\n%s", b.logs.String())
	}
}
