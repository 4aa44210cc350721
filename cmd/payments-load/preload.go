package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/payments-api/payments-api/internal/accounts"
	"github.com/payments-api/payments-api/internal/db"
	"github.com/payments-api/payments-api/internal/idempotency"
	"github.com/payments-api/payments-api/internal/payments"
	"github.com/payments-api/payments-api/internal/textout"
)

// The preload (-preload N) puts N payments into the server's database straight through COPY,
// as a server that has run for a while would hold them: each payment with its event, one in
// five partly refunded (the refund, its event, the payment's new version), the idempotency
// key of every create and refund, and a webhook delivery of every event of the API key's
// account. That account holds nine payments in ten; the rest are spread over other accounts,
// so its index ranges sit among other accounts' rows. Nothing runs ANALYZE: the server meets
// the rows with whatever statistics the tables had, as after a bulk import.
//
// Rows are made from their index (ids, amounts, statuses, times), so the tables are loaded
// side by side, each by its own COPY, and agree with each other without a lookup.

// preloadOthers is how many other accounts share the tenth of the payments the key's
// account does not hold.
const preloadOthers = 100

// preloadSpan is how far back the preloaded payments' created_at goes: they are all older
// than anything the server creates afterwards.
const preloadSpan = 30 * 24 * time.Hour

// preloader makes the rows of one preload.
type preloader struct {
	n        int
	demo     string // the API key's account
	others   []string
	endpoint string // the demo account's webhook endpoint, disabled so no delivery is sent
	tag      string // makes this preload's ids unique
	start    time.Time
	step     time.Duration
	expires  time.Time // every preloaded idempotency key's: a day from the preload
}

func newPreloader(n int, demoAccount string, now time.Time) *preloader {
	p := &preloader{
		n: n, demo: demoAccount, tag: strings.ToUpper(rand.Text()[:8]),
		start: now.Add(-preloadSpan), step: preloadSpan / time.Duration(max(n, 1)),
		expires: now.Add(idempotency.DefaultTTL),
	}
	for i := range preloadOthers {
		p.others = append(p.others, fmt.Sprintf("acct_preload%s%03d", p.tag, i))
	}
	p.endpoint = "we_preload" + p.tag
	return p
}

// preloadPayment is payment i and what hangs off it.
type preloadPayment struct {
	payment db.Payment
	refund  *db.Refund // one in five succeeded payments is refunded in part
}

// created is the payment as it was when it was made, before any refund: what its event and
// its key's stored answer carry.
func (pp preloadPayment) created() db.Payment {
	x := pp.payment
	x.AmountRefunded, x.Version, x.UpdatedAt = 0, 1, x.CreatedAt
	if x.Status == "partially_refunded" {
		x.Status = "succeeded"
	}
	return x
}

func (p *preloader) id(prefix string, i int) string {
	return fmt.Sprintf("%s_pl%s%09d", prefix, p.tag, i)
}

func (p *preloader) account(i int) string {
	if i%10 == 9 {
		return p.others[(i/10)%len(p.others)]
	}
	return p.demo
}

func (p *preloader) payment(i int) preloadPayment {
	created := p.start.Add(time.Duration(i) * p.step).UTC().Truncate(time.Microsecond)
	pay := db.Payment{
		ID: p.id("pay", i), AccountID: p.account(i), Amount: int64(1000 + i%9000), Currency: "usd",
		Status: "succeeded", PaymentMethod: "pm_card_visa", Metadata: []byte(`{"order":"` + fmt.Sprint(i) + `"}`),
		Version: 1, CreatedAt: created, UpdatedAt: created,
	}
	if i%50 == 7 {
		code := "card_declined"
		pay.Status, pay.PaymentMethod, pay.FailureCode = "failed", "pm_card_declined", &code
	}
	res := preloadPayment{payment: pay}
	if i%5 == 0 {
		r := db.Refund{
			ID: p.id("re", i), AccountID: pay.AccountID, PaymentID: pay.ID, Amount: pay.Amount / 2,
			Currency: "usd", Status: "succeeded", Metadata: []byte(`{}`), CreatedAt: created.Add(time.Second),
		}
		res.refund = &r
		res.payment.AmountRefunded, res.payment.Status = r.Amount, "partially_refunded"
		res.payment.Version, res.payment.UpdatedAt = 2, r.CreatedAt
	}
	return res
}

// rowsOf streams one row per payment (or none, when row returns nil) to a COPY.
func (p *preloader) rowsOf(row func(i int, pp preloadPayment) ([][]any, error)) pgx.CopyFromSource {
	i := 0
	var pending [][]any
	return pgx.CopyFromFunc(func() ([]any, error) {
		for len(pending) == 0 {
			if i == p.n {
				return nil, nil
			}
			var err error
			if pending, err = row(i, p.payment(i)); err != nil {
				return nil, err
			}
			i++
		}
		r := pending[0]
		pending = pending[1:]
		return r, nil
	})
}

// copyTable is one table's COPY.
type copyTable struct {
	name    string
	columns []string
	rows    func(i int, pp preloadPayment) ([][]any, error)
}

// tables are the payments' COPY, then the others in chains that may run side by side.
func (p *preloader) tables() (first copyTable, rest [][]copyTable) {
	payment := copyTable{"payments", []string{"id", "account_id", "amount", "currency", "status", "amount_refunded",
		"payment_method", "failure_code", "metadata", "version", "created_at", "updated_at"},
		func(_ int, pp preloadPayment) ([][]any, error) {
			x := pp.payment
			return [][]any{{x.ID, x.AccountID, x.Amount, x.Currency, x.Status, x.AmountRefunded, x.PaymentMethod,
				x.FailureCode, x.Metadata, x.Version, x.CreatedAt, x.UpdatedAt}}, nil
		}}
	refunds := copyTable{"refunds", []string{"id", "account_id", "payment_id", "amount", "currency", "status", "metadata", "created_at"},
		func(_ int, pp preloadPayment) ([][]any, error) {
			if r := pp.refund; r != nil {
				return [][]any{{r.ID, r.AccountID, r.PaymentID, r.Amount, r.Currency, r.Status, r.Metadata, r.CreatedAt}}, nil
			}
			return nil, nil
		}}
	events := copyTable{"events", []string{"id", "account_id", "type", "data", "created_at"}, p.eventRows}
	keys := copyTable{"idempotency_keys", []string{"account_id", "operation", "key", "fingerprint",
		"response_status", "response_headers", "response_body", "created_at", "expires_at"}, p.keyRows}
	deliveries := copyTable{"webhook_deliveries", []string{"id", "account_id", "endpoint_id", "event_id", "status",
		"attempt_count", "round_attempts", "next_attempt_at", "created_at", "updated_at"}, p.deliveryRows}
	// Refunds and keys need only the payments; deliveries need the events.
	return payment, [][]copyTable{{refunds}, {keys}, {events, deliveries}}
}

// eventRows are a payment's event, and its refund's.
func (p *preloader) eventRows(i int, pp preloadPayment) ([][]any, error) {
	body, err := resourceJSON(pp.created())
	if err != nil {
		return nil, err
	}
	kind := "payment.succeeded"
	if pp.payment.Status == "failed" {
		kind = "payment.failed"
	}
	rows := [][]any{{p.id("evt", 2*i), pp.payment.AccountID, kind, body, pp.payment.CreatedAt}}
	if r := pp.refund; r != nil {
		data, err := refundBody(*r)
		if err != nil {
			return nil, err
		}
		rows = append(rows, []any{p.id("evt", 2*i+1), r.AccountID, "refund.succeeded", data, r.CreatedAt})
	}
	return rows, nil
}

// deliveryRows are one delivery of each of the demo account's events, delivered.
func (p *preloader) deliveryRows(i int, pp preloadPayment) ([][]any, error) {
	if pp.payment.AccountID != p.demo {
		return nil, nil
	}
	row := func(n int, at time.Time) []any {
		return []any{p.id("msg", n), p.demo, p.endpoint, p.id("evt", n), "succeeded", 1, 1, nil, at, at}
	}
	rows := [][]any{row(2*i, pp.payment.CreatedAt)}
	if pp.refund != nil {
		rows = append(rows, row(2*i+1, pp.refund.CreatedAt))
	}
	return rows, nil
}

// keyRows are the idempotency keys of the payment's create and its refund's, each holding
// the response a replay answers with, valid for a day from the preload.
func (p *preloader) keyRows(i int, pp preloadPayment) ([][]any, error) {
	expires := p.expires
	x := pp.payment
	request := fmt.Sprintf(`{"amount":%d,"currency":"usd","payment_method":%q}`, x.Amount, x.PaymentMethod)
	body, err := resourceJSON(pp.created())
	if err != nil {
		return nil, err
	}
	status := int32(201)
	if x.Status == "failed" {
		status = 402 // a decline is stored too; its body here is the payment, not the problem
	}
	row, err := keyRow(x.AccountID, "payments.create", p.id("key", 2*i), request, status,
		map[string]string{"Content-Type": "application/json", "Location": "/payments/" + x.ID, "ETag": `"v1"`}, body, x.CreatedAt, expires)
	if err != nil {
		return nil, err
	}
	rows := [][]any{row}
	if r := pp.refund; r != nil {
		rb, err := refundBody(*r)
		if err != nil {
			return nil, err
		}
		row, err := keyRow(r.AccountID, "refunds.create", p.id("key", 2*i+1), fmt.Sprintf(`{"payment_id":%q,"amount":%d}`, r.PaymentID, r.Amount),
			201, map[string]string{"Content-Type": "application/json", "Location": "/refunds/" + r.ID}, rb, r.CreatedAt, expires)
		if err != nil {
			return nil, err
		}
		rows = append(rows, row)
	}
	return rows, nil
}

func keyRow(account, operation, key, request string, status int32, headers map[string]string, body []byte, created, expires time.Time) ([]any, error) {
	decoded, err := idempotency.Decode([]byte(request))
	if err != nil {
		return nil, err
	}
	fp, err := idempotency.Fingerprint(operation, decoded)
	if err != nil {
		return nil, err
	}
	h, err := json.Marshal(headers)
	if err != nil {
		return nil, err
	}
	return []any{account, operation, key, fp, status, h, body, created, expires}, nil
}

func refundBody(r db.Refund) ([]byte, error) {
	res, err := payments.RefundResource(r)
	if err != nil {
		return nil, err
	}
	return json.Marshal(res)
}

// runPreload loads cfg.Preload payments into cfg.DatabaseURL for cfg.APIKey's account.
func runPreload(ctx context.Context, cfg config, out io.Writer) error {
	pool, err := db.Open(ctx, cfg.DatabaseURL, db.Options{MaxConns: 4})
	if err != nil {
		return fmt.Errorf("connect for the preload: %w", err)
	}
	defer pool.Close()
	start := time.Now()
	_, counts, err := preload(ctx, pool, cfg.APIKey, cfg.Preload)
	if err != nil {
		return err
	}
	p := &textout.Printer{W: out}
	p.Printf("preloaded in %.1f s:", time.Since(start).Seconds())
	for _, t := range preloadTables {
		p.Printf(" %s %d", t, counts[t])
	}
	p.Printf("\n")
	return p.Err
}

// preloadTables are the tables a preload fills, as it reports them.
var preloadTables = []string{"payments", "refunds", "events", "webhook_deliveries", "idempotency_keys"}

// preload makes sure apiKey has its account (as the server seeds a demo key), then copies
// n payments and their rows in. It returns the preloader, which names every row, and how
// many rows each table got.
func preload(ctx context.Context, pool *pgxpool.Pool, apiKey string, n int) (*preloader, map[string]int64, error) {
	q := db.New(pool)
	if err := accounts.SeedDemoKeys(ctx, pool, []string{apiKey}); err != nil {
		return nil, nil, err
	}
	acct, err := accounts.Authenticate(ctx, q, apiKey)
	if err != nil {
		return nil, nil, fmt.Errorf("preload account: %w", err)
	}
	p := newPreloader(n, acct.ID, time.Now())
	others := make([][]any, len(p.others))
	for i, id := range p.others {
		others[i] = []any{id}
	}
	if _, err := pool.CopyFrom(ctx, pgx.Identifier{"accounts"}, []string{"id"}, pgx.CopyFromRows(others)); err != nil {
		return nil, nil, fmt.Errorf("copy accounts: %w", err)
	}
	endpoint := []any{p.endpoint, p.demo, "https://example.com/preload", []string{"*"}, "requested", "whsec_preload"}
	_, err = pool.CopyFrom(ctx, pgx.Identifier{"webhook_endpoints"}, []string{"id", "account_id", "url", "enabled_events", "disabled_reason", "secret"},
		pgx.CopyFromRows([][]any{endpoint}))
	if err != nil {
		return nil, nil, fmt.Errorf("preload endpoint: %w", err)
	}
	first, rest := p.tables()
	counts := &copyCounts{rows: map[string]int64{}}
	if err := p.copy(ctx, pool, first, counts); err != nil {
		return nil, nil, err
	}
	var wg sync.WaitGroup
	errs := make([]error, len(rest))
	for i, chain := range rest {
		wg.Go(func() {
			for _, t := range chain {
				if errs[i] = p.copy(ctx, pool, t, counts); errs[i] != nil {
					return
				}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, nil, err
	}
	return p, counts.rows, nil
}

// copyCounts are the rows each table got, written by the chains that copy at once.
type copyCounts struct {
	mu   sync.Mutex
	rows map[string]int64
}

func (p *preloader) copy(ctx context.Context, pool *pgxpool.Pool, t copyTable, counts *copyCounts) error {
	n, err := pool.CopyFrom(ctx, pgx.Identifier{t.name}, t.columns, p.rowsOf(t.rows))
	if err != nil {
		return fmt.Errorf("copy %s: %w", t.name, err)
	}
	counts.mu.Lock()
	counts.rows[t.name] = n
	counts.mu.Unlock()
	return nil
}
