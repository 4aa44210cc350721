package db_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/payments-api/payments-api/internal/testing/dbtest"
)

// lookup is a query that finds rows by equality, with the arguments to run it with and, for
// each table it reads, the equality columns the index it uses must lead with.
type lookup struct {
	args map[string]any      // by parameter name, as in the SQL; parameters left out are NULL
	keys map[string][]string // table → its equality columns in the query
	page string              // a keyset page's table: its scan must start at the cursor, and not sort
	// catalogs are PostgreSQL's own tables the query reads, a handful of rows each, which it
	// may read whole (pg_database, to name the current database in pg_locks).
	catalogs []string
}

// The fixture's rows: one of each kind, in account planAccount, which the load then fills.
const (
	planAccount  = "acct_plans"
	planPayment  = "pay_plans"
	planRefund   = "rfd_plans"
	planEvent    = "evt_plans"
	planJob      = "job_plans"
	planReport   = "rpt_plans"
	planEndpoint = "we_plans"
	planSpare    = "we_spare" // an endpoint without deliveries: cheap to delete in a test transaction
	planDelivery = "msg_plans"
	planKey      = "key_plans"
)

// byID is the lookup of one row of table by the account and its id.
func byID(table, id string) lookup {
	return lookup{
		args: map[string]any{"account_id": planAccount, "id": id},
		keys: map[string][]string{table: {"account_id", "id"}},
	}
}

// byIDs is the lookup of rows of table by pairs of accounts and ids, here one pair.
func byIDs(table, id string) lookup {
	return lookup{
		args: map[string]any{"account_ids": []string{planAccount}, "ids": []string{id}},
		keys: map[string][]string{table: {"account_id", "id"}},
	}
}

// pageOf is a keyset page of table's rows under key.
func pageOf(table string, key []string, args map[string]any) lookup {
	return lookup{args: args, keys: map[string][]string{table: key}, page: table}
}

// with returns l with more arguments.
func (l lookup) with(args map[string]any) lookup {
	all := maps.Clone(l.args)
	maps.Copy(all, args)
	return lookup{args: all, keys: l.keys, page: l.page}
}

var (
	accountKey = []string{"account_id"}
	firstPage  = map[string]any{"account_id": planAccount, "row_limit": 11}
	reportPage = map[string]any{"account_id": planAccount, "created_gte": "2000-01-01", "created_lt": "3000-01-01", "row_limit": 1000}
)

// lookups lists every query that reads rows by equality, keyset pages included (a page is a
// range, but only under its equality columns: a page of one payment's refunds must not walk
// the whole account's).
var lookups = map[string]lookup{
	"AccountGetByAPIKeyHash": {
		args: map[string]any{"key_hash": `\x01`},
		keys: map[string][]string{"api_keys": {"key_hash"}, "accounts": {"id"}},
	},
	"AccountExists":       {args: map[string]any{"id": planAccount}, keys: map[string][]string{"accounts": {"id"}}},
	"AccountGetForUpdate": {args: map[string]any{"id": planAccount}, keys: map[string][]string{"accounts": {"id"}}},
	// No such account: deleting planAccount would fail on its rows' foreign keys.
	"AccountDelete": {args: map[string]any{"id": "acct_none"}, keys: map[string][]string{"accounts": {"id"}}},

	"PaymentGetByID":      byID("payments", planPayment),
	"PaymentVersion":      byID("payments", planPayment),
	"PaymentGetByIDs":     byIDs("payments", planPayment),
	"PaymentVersions":     byIDs("payments", planPayment),
	"PaymentGetForUpdate": byID("payments", planPayment),
	"PaymentUpdate":       byID("payments", planPayment),
	"PaymentAddRefund":    byID("payments", planPayment).with(map[string]any{"amount": 1}),
	"PaymentList":         pageOf("payments", accountKey, firstPage),
	"PaymentListByStatus": pageOf("payments", []string{"account_id", "status"},
		map[string]any{"account_id": planAccount, "status": "succeeded", "row_limit": 11}),
	"PaymentReportPage": pageOf("payments", accountKey, reportPage),

	"RefundGetByID": byID("refunds", planRefund),
	"RefundList":    pageOf("refunds", accountKey, firstPage),
	"RefundListByPayment": pageOf("refunds", []string{"account_id", "payment_id"},
		map[string]any{"account_id": planAccount, "payment_id": planPayment, "row_limit": 11}),
	"RefundReportPage": pageOf("refunds", accountKey, reportPage),

	"EventGetByID": byID("events", planEvent),
	"EventList":    pageOf("events", accountKey, firstPage),
	"EventListByType": pageOf("events", []string{"account_id", "type"},
		map[string]any{"account_id": planAccount, "type": "payment.succeeded", "row_limit": 11}),

	"IdempotencyKeyClaim": {
		args: map[string]any{"lock_key": "plans", "account_id": planAccount, "operation": "op", "key": planKey, "fingerprint": `\x00`, "ttl_seconds": 60},
		keys: map[string][]string{"idempotency_keys": {"account_id", "operation", "key"}},
	},
	"IdempotencyKeyGet": {
		args: map[string]any{"account_id": planAccount, "operation": "op", "key": planKey},
		keys: map[string][]string{"idempotency_keys": {"account_id", "operation", "key"}},
	},
	"IdempotencyKeyInFlight": {
		args:     map[string]any{"lock_key": "plans", "account_id": planAccount, "operation": "op", "key": planKey},
		keys:     map[string][]string{"idempotency_keys": {"account_id", "operation", "key"}},
		catalogs: []string{"pg_database"},
	},
	"IdempotencyKeyDeleteIfExpired": {
		args: map[string]any{"account_id": planAccount, "operation": "op", "key": planKey},
		keys: map[string][]string{"idempotency_keys": {"account_id", "operation", "key"}},
	},
	"IdempotencyKeySaveResponse": {
		args: map[string]any{"account_id": planAccount, "operation": "op", "key": planKey},
		keys: map[string][]string{"idempotency_keys": {"account_id", "operation", "key"}},
	},

	"JobGetByID":     byID("jobs", planJob),
	"JobCancel":      byID("jobs", planJob).with(map[string]any{"retention_seconds": 60}),
	"JobLockForWork": byID("jobs", planJob),
	"JobStart":       byID("jobs", planJob),
	"JobAddProgress": byID("jobs", planJob).with(map[string]any{"rows": 1}),
	"JobFinish":      byID("jobs", planJob).with(map[string]any{"status": "failed", "retention_seconds": 60}),
	"JobList":        pageOf("jobs", accountKey, firstPage),
	"JobListByStatus": pageOf("jobs", []string{"account_id", "status"},
		map[string]any{"account_id": planAccount, "status": "queued", "row_limit": 11}),

	"ReportRequestGet": {
		args: map[string]any{"account_id": planAccount, "job_id": planJob},
		keys: map[string][]string{"report_requests": {"account_id", "job_id"}},
	},
	"ReportRequestAdvance": {
		args: map[string]any{"account_id": planAccount, "job_id": planJob, "bytes": 1},
		keys: map[string][]string{"report_requests": {"account_id", "job_id"}},
	},
	"ReportChunkGet": {
		args: map[string]any{"account_id": planAccount, "job_id": planJob, "seq": 0},
		keys: map[string][]string{"report_chunks": {"account_id", "job_id", "seq"}},
	},
	"ReportGetByID": {
		args: map[string]any{"account_id": planAccount, "id": planReport},
		keys: map[string][]string{"reports": {"account_id", "id"}, "jobs": {"account_id", "id"}},
	},

	"WebhookEndpointGetByID":       byID("webhook_endpoints", planEndpoint),
	"WebhookEndpointGetForUpdate":  byID("webhook_endpoints", planEndpoint),
	"WebhookEndpointUpdate":        byID("webhook_endpoints", planEndpoint),
	"WebhookEndpointRotateSecret":  byID("webhook_endpoints", planEndpoint).with(map[string]any{"secret": "whsec_new"}),
	"WebhookEndpointDelete":        byID("webhook_endpoints", planSpare),
	"WebhookEndpointRecordSuccess": byID("webhook_endpoints", planEndpoint),
	"WebhookEndpointRecordFailure": byID("webhook_endpoints", planEndpoint).with(map[string]any{"now": "2000-01-01"}),
	"WebhookEndpointDisableGone":   byID("webhook_endpoints", planEndpoint),
	"WebhookEndpointList":          pageOf("webhook_endpoints", accountKey, firstPage),
	"WebhookEndpointListSubscribed": {
		args: map[string]any{"account_id": planAccount, "type": "payment.succeeded"}, keys: map[string][]string{"webhook_endpoints": accountKey},
	},
	"WebhookEndpointListSubscribedAny": {
		args: map[string]any{"account_id": planAccount, "types": []string{"payment.succeeded", "payment.failed"}}, keys: map[string][]string{"webhook_endpoints": accountKey},
	},

	"WebhookDeliveryGetByID":       byID("webhook_deliveries", planDelivery),
	"WebhookDeliveryLock":          byID("webhook_deliveries", planDelivery),
	"WebhookDeliveryRecordAttempt": byID("webhook_deliveries", planDelivery).with(map[string]any{"status": "failed"}),
	"WebhookDeliveryCountAttempt":  byID("webhook_deliveries", planDelivery),
	"WebhookDeliveryFail":          byID("webhook_deliveries", planDelivery),
	"WebhookDeliveryInsertMany": {
		args: map[string]any{"account_id": planAccount, "ids": []string{"msg_plans_new"}, "endpoint_ids": []string{planSpare}, "event_id": planEvent},
		keys: map[string][]string{"webhook_endpoints": {"account_id", "id"}},
	},
	"WebhookDeliveryLockByEndpoint": {
		args: map[string]any{"account_id": planAccount, "endpoint_id": planEndpoint},
		keys: map[string][]string{"webhook_deliveries": {"account_id", "endpoint_id"}},
	},
	"WebhookDeliveryFailPendingByEndpoint": {
		args: map[string]any{"account_id": planAccount, "endpoint_id": planEndpoint},
		keys: map[string][]string{"webhook_deliveries": {"account_id", "endpoint_id"}},
	},
	"WebhookDeliveryListByEndpoint": {
		args: map[string]any{"account_id": planAccount, "endpoint_id": planEndpoint, "row_limit": 11},
		keys: map[string][]string{"webhook_deliveries": {"account_id", "endpoint_id"}, "events": {"account_id", "id"}},
		page: "webhook_deliveries",
	},
	"WebhookAttemptListByDeliveries": {
		args: map[string]any{"account_id": planAccount, "delivery_ids": []string{planDelivery}},
		keys: map[string][]string{"webhook_attempts": {"account_id", "delivery_id"}},
	},
}

// notLookups are the queries that read rows but are no lookup, and why.
var notLookups = map[string]string{
	"JobListAbandoned":     "the sweep: unfinished jobs of every account",
	"JobDeleteExpired":     "the sweep: expired jobs of every account",
	"RiverJobCountWaiting": "River's table",

	"IdempotencyKeyDeleteExpired":          "the sweep: expired keys of every account",
	"IdempotencyKeyInsertExpired":          "the load tool's bulk insert of expired keys",
	"EventDeleteExpired":                   "the sweep: old events of every account",
	"WebhookAttemptDeleteOfExpiredEvents":  "the sweep: attempts of old events of every account",
	"WebhookDeliveryDeleteOfExpiredEvents": "the sweep: deliveries of old events of every account",
	"ReportChunkDeleteOfExpiredJobs":       "the sweep: chunks of expired jobs of every account",
	"IdempotencyKeyExpireByAccount":        "a test helper: every key of the account",
	"JobListUnfinishedByAccount":           "a test helper: every unfinished job of the account",
	"WebhookDeliveryRetryNowByAccount":     "a test helper: every pending delivery of the account",

	"PaymentLockByAccount":           "locks every row of the account, before deleting them",
	"JobLockByAccount":               "locks every row of the account, before deleting them",
	"WebhookAttemptDeleteByAccount":  "deletes every row of the account",
	"WebhookDeliveryDeleteByAccount": "deletes every row of the account",
	"WebhookEndpointDeleteByAccount": "deletes every row of the account",
	"ReportDeleteByAccount":          "deletes every row of the account",
	"JobDeleteByAccount":             "deletes every row of the account",
	"EventDeleteByAccount":           "deletes every row of the account",
	"RefundDeleteByAccount":          "deletes every row of the account",
	"PaymentDeleteByAccount":         "deletes every row of the account",
	"IdempotencyKeyDeleteByAccount":  "deletes every row of the account",
	"APIKeyDeleteByAccount":          "deletes every row of the account",
}

// planRows is how many rows of each kind the load gives planAccount: enough that walking
// them all is visible in the buffers a lookup touches.
const planRows = 20_000

// TestLookupPlansLeadWithTheirKeys checks that every lookup reads each table through an
// index whose leading columns are exactly its equality columns, whatever the statistics were
// when its plan was made. The server prepares each statement once per connection and plans
// it once, generically (db.Open sets plan_cache_mode = force_generic_plan), from the
// statistics of that moment, until an ANALYZE or a schema change. A lookup whose equality
// columns lead no index depends on that moment: a plan made while the tables were nearly
// empty walked (account_id, created_at, id) for one id, every entry of the account, once a
// load run had left many thousands of payments in one account before any ANALYZE.
//
// Every lookup is planned as the server's connections plan it, generically, with nearly
// empty tables, with 500, 5,000 and planRows rows in one account never analysed, and
// analysed. The plans
// made while the tables were nearly empty are also run on the loaded tables, as a
// connection's cached plans would be, and the buffers each touches are logged. A page must
// not sort either: a sort reads every row under its key first (pages are ranges by nature:
// their scan is checked to start at the cursor).
//
// Not covered, because no index changes it: a plan made just after an ANALYZE of a table of
// one page is a sequential scan, kept until the next ANALYZE (which autovacuum runs as the
// table grows).
func TestLookupPlansLeadWithTheirKeys(t *testing.T) {
	t.Parallel()
	queries := generatedQueries(t)
	checkClassified(t, queries)

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cfg, err := pgx.ParseConfig(dbtest.NewURL(t))
	if err != nil {
		t.Fatal(err)
	}
	// The statements this test prepares are its own (PREPARE), so pgx prepares nothing.
	cfg.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	other, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close(context.Background())
	p := &planner{t: t, ctx: ctx, conn: conn, queries: queries}
	p.exec(autovacuumOff) // "never analysed" must hold whatever the server's settings
	p.exec(fixture)
	p.indexes = indexColumns(t, ctx, conn)
	p.exec(`SET plan_cache_mode = force_generic_plan`)
	p.checkAll("nearly empty tables")

	// Which of two indexes a generic plan takes can flip as a table grows without statistics
	// (their estimated costs nearly tie), so the plans are made afresh, on a second connection,
	// at several sizes on the way; p keeps the plans it made with the tables nearly empty.
	fresh := &planner{t: t, ctx: ctx, conn: other, queries: queries, indexes: p.indexes}
	fresh.exec(`SET plan_cache_mode = force_generic_plan`)
	loaded := 0
	for _, rows := range []int{planRows / 40, planRows / 4, planRows} {
		p.exec(fmt.Sprintf(load, loaded+1, rows))
		loaded = rows
		fresh.exec(`DEALLOCATE ALL`)
		fresh.checkAll(fmt.Sprintf("%d rows in one account, never analysed", rows))
	}
	p.logBuffers(fmt.Sprintf("plans cached while the tables were nearly empty, run with %d rows in the account", planRows))

	p.exec(`DEALLOCATE ALL; ANALYZE`)
	p.checkAll("analysed")
}

// checkClassified fails for a query that is neither a lookup nor a notLookup, so a new query
// cannot be forgotten, and for an entry naming a query that no longer exists.
func checkClassified(t *testing.T, queries map[string]generatedQuery) {
	t.Helper()
	for _, name := range slices.Sorted(maps.Keys(queries)) {
		_, isLookup := lookups[name]
		_, isNot := notLookups[name]
		switch {
		case !readsRows(queries[name].SQL) && !isLookup:
		case !isLookup && !isNot:
			t.Errorf("query %s is not classified: add it to lookups in plans_test.go with its arguments and "+
				"the equality columns of each table it reads, or to notLookups with the reason it is no lookup", name)
		case isLookup && isNot:
			t.Errorf("query %s is both in lookups and in notLookups", name)
		}
	}
	for _, name := range slices.Concat(slices.Collect(maps.Keys(lookups)), slices.Collect(maps.Keys(notLookups))) {
		if _, ok := queries[name]; !ok {
			t.Errorf("%s is listed in plans_test.go but sqlc generates no such query", name)
		}
	}
}

// planner prepares and explains the lookups on one connection, as a server connection would.
type planner struct {
	t       *testing.T
	ctx     context.Context
	conn    *pgx.Conn
	queries map[string]generatedQuery
	indexes map[string][]string
}

func (p *planner) exec(sql string) {
	p.t.Helper()
	if _, err := p.conn.Exec(p.ctx, sql); err != nil {
		p.t.Fatalf("%.60s...: %v", sql, err)
	}
}

// checkAll prepares every lookup (unless already prepared) and checks its generic plan.
func (p *planner) checkAll(state string) {
	for _, name := range slices.Sorted(maps.Keys(lookups)) {
		plan, err := p.explain(name, "FORMAT JSON")
		if err != nil {
			p.t.Errorf("%s (%s): %v", name, state, err)
			continue
		}
		for _, s := range scans(plan) {
			if slices.Contains(lookups[name].catalogs, s.Table) {
				continue
			}
			msg := problem(s, lookups[name].keys[s.Table], p.indexes)
			if msg == "" && s.Table == lookups[name].page {
				msg = pageProblem(s)
			}
			if msg != "" {
				p.t.Errorf("%s, %s: %s", name, state, msg)
			}
		}
		if lookups[name].page != "" && sorts(plan) {
			p.t.Errorf("%s, %s: the page sorts, so it reads every row under its key first", name, state)
		}
	}
}

// logBuffers runs every lookup's prepared plan once and logs the buffers it touched: what
// a lookup costs with the plan a connection cached earlier.
func (p *planner) logBuffers(state string) {
	p.t.Logf("shared buffers per lookup, %s:", state)
	for _, name := range slices.Sorted(maps.Keys(lookups)) {
		tx, err := p.conn.Begin(p.ctx) // some lookups write: the rollback undoes it
		if err != nil {
			p.t.Fatal(err)
		}
		plan, err := p.explain(name, "ANALYZE, BUFFERS, FORMAT JSON")
		if rbErr := tx.Rollback(p.ctx); err != nil || rbErr != nil {
			p.t.Errorf("%s: %v %v", name, err, rbErr)
			continue
		}
		var used []string
		for _, s := range scans(plan) {
			used = append(used, s.Node+" "+s.Table+" "+s.Index)
		}
		if sorts(plan) { // a page that sorts has read every row under its key first
			used = append(used, "Sort")
		}
		p.t.Logf("  %-38s %6d  %s", name, plan.SharedHitBlocks+plan.SharedReadBlocks, strings.Join(used, "; "))
	}
}

// explain prepares the query (once per connection) and returns the plan EXPLAIN (options)
// EXECUTE shows for it.
func (p *planner) explain(name, options string) (planNode, error) {
	q, l := p.queries[name], lookups[name]
	stmt := strings.ToLower(name)
	var prepared bool
	err := p.conn.QueryRow(p.ctx, `SELECT EXISTS (SELECT FROM pg_prepared_statements WHERE name = $1)`, stmt).Scan(&prepared)
	if err == nil && !prepared {
		_, err = p.conn.Exec(p.ctx, "PREPARE "+stmt+" AS "+q.SQL)
	}
	if err != nil {
		return planNode{}, err
	}
	args, err := executeArgs(q, l.args)
	if err != nil {
		return planNode{}, err
	}
	var out []byte
	err = p.conn.QueryRow(p.ctx, "EXPLAIN ("+options+") EXECUTE "+stmt+args).Scan(&out)
	if err != nil {
		return planNode{}, err
	}
	var plans []struct{ Plan planNode }
	if err := json.Unmarshal(out, &plans); err != nil {
		return planNode{}, err
	}
	return plans[0].Plan, nil
}

// executeArgs renders EXECUTE's argument list, "(... )", from args by parameter name.
func executeArgs(q generatedQuery, args map[string]any) (string, error) {
	for name := range args {
		if !slices.Contains(q.Params, paramKey(name)) {
			return "", fmt.Errorf("lookups gives argument %s, but the query's parameters are %v", name, q.Params)
		}
	}
	if len(q.Params) == 0 {
		return "", nil
	}
	byKey := map[string]any{}
	for name, v := range args {
		byKey[paramKey(name)] = v
	}
	rendered := make([]string, len(q.Params))
	for i, name := range q.Params {
		rendered[i] = literal(byKey[name])
	}
	return "(" + strings.Join(rendered, ", ") + ")", nil
}

// indexColumns maps each index of the schema to its key columns, in order.
func indexColumns(t *testing.T, ctx context.Context, conn *pgx.Conn) map[string][]string {
	t.Helper()
	rows, err := conn.Query(ctx, `
		SELECT i.relname, ARRAY(SELECT pg_get_indexdef(x.indexrelid, k, true) FROM generate_series(1, x.indnkeyatts) k)
		FROM pg_index x
		JOIN pg_class i ON i.oid = x.indexrelid
		JOIN pg_namespace n ON n.oid = i.relnamespace
		WHERE n.nspname = current_schema()`)
	if err != nil {
		t.Fatal(err)
	}
	indexes := map[string][]string{}
	for rows.Next() {
		var name string
		var cols []string
		if err := rows.Scan(&name, &cols); err != nil {
			t.Fatal(err)
		}
		indexes[name] = cols
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return indexes
}

const autovacuumOff = `
ALTER TABLE accounts SET (autovacuum_enabled = off);
ALTER TABLE api_keys SET (autovacuum_enabled = off);
ALTER TABLE payments SET (autovacuum_enabled = off);
ALTER TABLE refunds SET (autovacuum_enabled = off);
ALTER TABLE events SET (autovacuum_enabled = off);
ALTER TABLE idempotency_keys SET (autovacuum_enabled = off);
ALTER TABLE jobs SET (autovacuum_enabled = off);
ALTER TABLE report_requests SET (autovacuum_enabled = off);
ALTER TABLE report_chunks SET (autovacuum_enabled = off);
ALTER TABLE reports SET (autovacuum_enabled = off);
ALTER TABLE webhook_endpoints SET (autovacuum_enabled = off);
ALTER TABLE webhook_deliveries SET (autovacuum_enabled = off);
ALTER TABLE webhook_attempts SET (autovacuum_enabled = off);
`

// fixture is one row of each kind in planAccount: the rows the lookups find. They are the
// oldest of the account, last in its newest-first indexes.
const fixture = `
INSERT INTO accounts (id) VALUES ('acct_plans');
INSERT INTO api_keys (id, account_id, key_hash, prefix) VALUES ('key_plans', 'acct_plans', '\x01', 'sk_test_plans');
INSERT INTO payments (id, account_id, amount, currency, status, payment_method)
VALUES ('pay_plans', 'acct_plans', 1000, 'usd', 'succeeded', 'card');
INSERT INTO refunds (id, account_id, payment_id, amount, currency, status)
VALUES ('rfd_plans', 'acct_plans', 'pay_plans', 1, 'usd', 'succeeded');
INSERT INTO events (id, account_id, type, data) VALUES ('evt_plans', 'acct_plans', 'payment.succeeded', '{}');
INSERT INTO jobs (id, account_id, type, status, river_job_id) VALUES ('job_plans', 'acct_plans', 'report', 'queued', 0);
INSERT INTO report_requests (account_id, job_id, type, format, created_gte, created_lt)
VALUES ('acct_plans', 'job_plans', 'payments', 'csv', '2000-01-01', '3000-01-01');
INSERT INTO report_chunks (account_id, job_id, seq, data) VALUES ('acct_plans', 'job_plans', 0, '\x00');
INSERT INTO reports (id, account_id, job_id, type, format, created_gte, created_lt, row_count, byte_size, chunks)
VALUES ('rpt_plans', 'acct_plans', 'job_plans', 'payments', 'csv', '2000-01-01', '3000-01-01', 0, 1, 1);
INSERT INTO webhook_endpoints (id, account_id, url, enabled_events, secret)
VALUES ('we_plans', 'acct_plans', 'https://example.com/hook', '{*}', 'whsec_plans'),
       ('we_spare', 'acct_plans', 'https://example.com/spare', '{*}', 'whsec_spare');
INSERT INTO webhook_deliveries (id, account_id, endpoint_id, event_id) VALUES ('msg_plans', 'acct_plans', 'we_plans', 'evt_plans');
INSERT INTO webhook_attempts (account_id, delivery_id, attempt, attempted_at, duration_ms)
VALUES ('acct_plans', 'msg_plans', 1, now(), 1);
INSERT INTO idempotency_keys (account_id, operation, key, fingerprint, expires_at)
VALUES ('acct_plans', 'op', 'key_plans', '\x00', now() + interval '1 day');
`

// load adds rows %[1]d to %[2]d of each kind to planAccount, in one statement per table and
// without ANALYZE, as a load run does, and as many other accounts.
const load = `
INSERT INTO accounts (id) SELECT 'acct_' || lpad(i::text, 26, '0') FROM generate_series(%[1]d, %[2]d) i;
INSERT INTO api_keys (id, account_id, key_hash, prefix)
SELECT 'key_' || i, 'acct_' || lpad(i::text, 26, '0'), sha256(i::text::bytea), 'sk_test_' || i FROM generate_series(%[1]d, %[2]d) i;
INSERT INTO payments (id, account_id, amount, currency, status, payment_method)
SELECT 'pay_' || lpad(i::text, 26, '0'), 'acct_plans', 1000, 'usd', CASE WHEN i %% 50 = 0 THEN 'failed' ELSE 'succeeded' END, 'card'
FROM generate_series(%[1]d, %[2]d) i;
INSERT INTO refunds (id, account_id, payment_id, amount, currency, status)
SELECT 'rfd_' || i, 'acct_plans', 'pay_' || lpad(i::text, 26, '0'), 1, 'usd', 'succeeded' FROM generate_series(%[1]d, %[2]d) i;
INSERT INTO events (id, account_id, type, data)
SELECT 'evt_' || i, 'acct_plans', (ARRAY['payment.succeeded', 'payment.failed', 'payment.updated', 'refund.succeeded'])[i %% 4 + 1], '{}'
FROM generate_series(%[1]d, %[2]d) i;
INSERT INTO jobs (id, account_id, type, status, river_job_id, finished_at, expires_at)
SELECT 'job_' || lpad(i::text, 26, '0'), 'acct_plans', 'report', s, 0, f, f + interval '1 day'
FROM generate_series(%[1]d, %[2]d) i,
     LATERAL (SELECT CASE WHEN i %% 10 = 0 THEN 'queued' ELSE 'succeeded' END) st(s),
     LATERAL (SELECT CASE WHEN s = 'succeeded' THEN now() END) fin(f);
INSERT INTO report_requests (account_id, job_id, type, format, created_gte, created_lt)
SELECT 'acct_plans', 'job_' || lpad(i::text, 26, '0'), 'payments', 'csv', '2000-01-01', '3000-01-01' FROM generate_series(%[1]d, %[2]d) i;
INSERT INTO report_chunks (account_id, job_id, seq, data)
SELECT 'acct_plans', 'job_' || lpad(i::text, 26, '0'), 0, '\x00' FROM generate_series(%[1]d, %[2]d) i;
INSERT INTO reports (id, account_id, job_id, type, format, created_gte, created_lt, row_count, byte_size, chunks)
SELECT 'rpt_' || i, 'acct_plans', 'job_' || lpad(i::text, 26, '0'), 'payments', 'csv', '2000-01-01', '3000-01-01', 0, 1, 1
FROM generate_series(%[1]d, %[2]d) i;
INSERT INTO webhook_endpoints (id, account_id, url, enabled_events, secret)
SELECT 'we_' || i, 'acct_plans', 'https://example.com/' || i, '{*}', 'whsec' FROM generate_series(%[1]d, %[2]d) i;
INSERT INTO webhook_deliveries (id, account_id, endpoint_id, event_id)
SELECT 'msg_' || i, 'acct_plans', 'we_' || i, 'evt_' || i FROM generate_series(%[1]d, %[2]d) i;
INSERT INTO webhook_attempts (account_id, delivery_id, attempt, attempted_at, duration_ms)
SELECT 'acct_plans', 'msg_' || i, 1, now(), 1 FROM generate_series(%[1]d, %[2]d) i;
INSERT INTO idempotency_keys (account_id, operation, key, fingerprint, expires_at)
SELECT 'acct_plans', 'op', 'key_' || i, '\x00', now() + interval '1 day' FROM generate_series(%[1]d, %[2]d) i;
`
