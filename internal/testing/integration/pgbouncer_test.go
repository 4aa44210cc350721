package integration

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/payments-api/payments-api/internal/testing/apitest"
	"github.com/payments-api/payments-api/internal/testing/dbtest"
)

// pgbouncerPoolSize is PgBouncer's server connections per database and user in transaction
// pooling: fewer than the server's pool (pool_max_conns below), so the server's connections
// really share them and a statement prepared on one is missing on the next. In session
// pooling each client connection holds one, so there are enough for all of them.
const (
	pgbouncerPoolSize        = 2
	pgbouncerSessionPoolSize = 30
)

// TestCoreFlowsThroughPgBouncer runs the server's core flows with its pool behind PgBouncer
// in transaction pooling mode, where each transaction gets whichever server connection is
// free: nothing may lean on session state (a prepared statement, a SET, a LISTEN, a
// session-level advisory lock) from one transaction to the next. It runs them in each of
// pgx's query exec modes the server accepts behind a pooler, and in pgx's default mode
// behind a PgBouncer that keeps prepared statements (1.21 or later, first on PATH; Debian
// 12's is 1.18, where that case is skipped). Last, in pgx's default mode behind PgBouncer in
// session pooling (deploy/cluster's PGBOUNCER_POOL_MODE=session), where a client connection
// keeps its server connection and the statements prepared on it.
func TestCoreFlowsThroughPgBouncer(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs PgBouncer and the server for several seconds")
	}
	for _, mode := range []string{"cache_describe", "exec", "simple_protocol"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			checkCoreFlowsThroughPgBouncer(t, mode, pgbouncerConfig{poolMode: "transaction"})
		})
	}
	t.Run("cache_statement", func(t *testing.T) {
		t.Parallel()
		if v := pgbouncerVersion(t); v < 121 {
			t.Skipf("PgBouncer %d.%d keeps no prepared statements (max_prepared_statements came in 1.21)", v/100, v%100)
		}
		checkCoreFlowsThroughPgBouncer(t, "cache_statement", pgbouncerConfig{poolMode: "transaction", keepPrepared: true})
	})
	t.Run("session_pooling", func(t *testing.T) {
		t.Parallel()
		checkCoreFlowsThroughPgBouncer(t, "cache_statement", pgbouncerConfig{poolMode: "session"})
	})
}

// pgbouncerConfig is how startPgBouncer configures PgBouncer: its pool_mode, and with
// keepPrepared, in transaction pooling, max_prepared_statements.
type pgbouncerConfig struct {
	poolMode     string
	keepPrepared bool
}

// keepsPrepared reports whether a client's prepared statements survive from one transaction
// to the next, which the server is told (DATABASE_POOLER_PREPARED_STATEMENTS).
func (c pgbouncerConfig) keepsPrepared() bool { return c.keepPrepared || c.poolMode == "session" }

// checkCoreFlowsThroughPgBouncer runs the core flows through a PgBouncer of their own,
// configured as cfg says, in execMode.
func checkCoreFlowsThroughPgBouncer(t *testing.T, execMode string, cfg pgbouncerConfig) {
	direct := dbtest.NewURL(t)
	pooled := startPgBouncer(t, direct, cfg)
	q := pooled.Query()
	q.Set("default_query_exec_mode", execMode)
	q.Set("pool_max_conns", "8")
	pooled.RawQuery = q.Encode()
	p := startProcess(t, pooled.String(), map[string]string{
		"DATABASE_DIRECT_URL": direct, "WEBHOOK_ALLOW_PRIVATE_NETWORKS": "true", "PROCESSOR_LATENCY": "100ms",
		"DATABASE_POOLER_PREPARED_STATEMENTS": strconv.FormatBool(cfg.keepsPrepared()),
	})
	c := apitest.NewClient(t, p.Base, testKey)

	// The server's pool sends PgBouncer no startup setting (it would refuse the connection);
	// the generic plans the server's direct connections ask for come from connect_query.
	var mode string
	if err := Pool(t, pooled.String()).QueryRow(context.Background(), "SHOW plan_cache_mode").Scan(&mode); err != nil || mode != "force_generic_plan" {
		t.Errorf("plan_cache_mode through PgBouncer: %q (%v), want force_generic_plan", mode, err)
	}

	paymentID := checkPaymentFlows(t, c)
	checkConcurrentRetries(t, c, Pool(t, direct))
	checkRefund(t, c, paymentID)
	checkReport(t, c)
	checkWebhookDelivery(t, c)
}

// systemTool is the path of the program name from Debian's package of that name, which puts
// it in /usr/sbin, outside a user's PATH. The test is skipped where it is not installed;
// .ci/run installs it.
func systemTool(t *testing.T, name string) string {
	t.Helper()
	bin, err := osexec.LookPath(name)
	if err != nil {
		bin = "/usr/sbin/" + name
	}
	if _, err := os.Stat(bin); err != nil {
		t.Skipf("%s is not installed (apt-get install %[1]s; .ci/run installs it)", name)
	}
	return bin
}

// pgbouncerVersion is the version of the PgBouncer startPgBouncer runs, as major*100+minor
// (1.18 is 118).
func pgbouncerVersion(t *testing.T) int {
	t.Helper()
	out, err := osexec.CommandContext(context.Background(), systemTool(t, "pgbouncer"), "--version").Output()
	if err != nil {
		t.Fatal(err)
	}
	var major, minor int
	if _, err := fmt.Sscanf(string(out), "PgBouncer %d.%d", &major, &minor); err != nil {
		t.Fatalf("pgbouncer --version: %q: %v", out, err)
	}
	return major*100 + minor
}

// startPgBouncer runs a private PgBouncer, configured as cfg says, in front of the PostgreSQL
// server of databaseURL and returns databaseURL rewritten to go through it.
func startPgBouncer(t *testing.T, databaseURL string, cfg pgbouncerConfig) *url.URL {
	t.Helper()
	bin := systemTool(t, "pgbouncer")
	u, err := url.Parse(databaseURL)
	if err != nil {
		t.Fatal(err)
	}
	dir := pgbouncerDir(t)
	port := FreePort(t)
	poolSize := pgbouncerPoolSize
	if cfg.poolMode == "session" {
		poolSize = pgbouncerSessionPoolSize
	}
	// connect_query as in deploy/cluster/pgbouncer.ini: what the server sets on its direct
	// connections, it cannot send through PgBouncer.
	ini := fmt.Sprintf(`[databases]
* = host=%s port=%s connect_query='SET plan_cache_mode = force_generic_plan'
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = %s
unix_socket_dir =
auth_type = trust
auth_file = %s
pool_mode = %s
default_pool_size = %d
max_client_conn = 100
`, u.Hostname(), u.Port(), port, filepath.Join(dir, "users.txt"), cfg.poolMode, poolSize)
	if cfg.keepPrepared {
		ini += "max_prepared_statements = 100\n"
	}
	writeFile(t, filepath.Join(dir, "users.txt"), fmt.Sprintf("%q \"\"\n", u.User.Username()))
	writeFile(t, filepath.Join(dir, "pgbouncer.ini"), ini)

	args := []string{filepath.Join(dir, "pgbouncer.ini")}
	if os.Geteuid() == 0 { // PgBouncer refuses to run as root
		args = append([]string{"-u", "postgres"}, args...)
	}
	cmd := osexec.CommandContext(context.Background(), bin, args...)
	logs := &SyncBuffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("pgbouncer's log:\n%s", logs)
		}
	})
	WaitFor(t, func() bool {
		conn, err := new(net.Dialer).DialContext(context.Background(), "tcp", "127.0.0.1:"+port)
		if err == nil {
			conn.Close()
		}
		return err == nil
	})
	u.Host = "127.0.0.1:" + port
	return u
}

// pgbouncerDir is a directory PgBouncer can read its configuration from even when it drops
// root for the postgres user.
func pgbouncerDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func writeFile(t *testing.T, name, content string) {
	t.Helper()
	if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// checkPaymentFlows creates a payment with metadata, replays it, reads it with ETag and 304,
// and updates its description and metadata with If-Match. It returns the payment's id.
func checkPaymentFlows(t *testing.T, c *apitest.Client) string {
	t.Helper()
	body := map[string]any{"amount": 5000, "currency": "usd", "payment_method": "pm_card_visa",
		"metadata": map[string]string{"order": "42"}}
	key := apitest.Header("Idempotency-Key", "pgbouncer-create")
	first := c.Post("/payments", body, key)
	if first.Status != http.StatusCreated {
		t.Fatalf("create: %d %s", first.Status, first.Body)
	}
	var pay struct{ ID string }
	first.Decode(t, &pay)
	replay := c.Post("/payments", body, key)
	if replay.Status != http.StatusCreated || replay.Header.Get("Idempotent-Replayed") != "true" || string(replay.Body) != string(first.Body) {
		t.Errorf("replay: %d Idempotent-Replayed=%q %s", replay.Status, replay.Header.Get("Idempotent-Replayed"), replay.Body)
	}

	got := c.Get("/payments/" + pay.ID)
	etag := got.Header.Get("ETag")
	if got.Status != http.StatusOK || etag == "" {
		t.Fatalf("get: %d ETag=%q", got.Status, etag)
	}
	if res := c.Get("/payments/"+pay.ID, apitest.Header("If-None-Match", etag)); res.Status != http.StatusNotModified {
		t.Errorf("get with If-None-Match: %d, want 304", res.Status)
	}
	patch := map[string]any{"description": "through pgbouncer", "metadata": map[string]string{"note": "a"}}
	res := c.Patch("/payments/"+pay.ID, patch, apitest.Header("If-Match", etag))
	var patched struct{ Metadata map[string]string }
	res.Decode(t, &patched)
	if res.Status != http.StatusOK || patched.Metadata["order"] != "42" || patched.Metadata["note"] != "a" {
		t.Errorf("patch with the current ETag: %d %s", res.Status, res.Body)
	}
	if res := c.Patch("/payments/"+pay.ID, patch, apitest.Header("If-Match", etag)); res.Status != http.StatusPreconditionFailed {
		t.Errorf("patch with a stale ETag: %d, want 412", res.Status)
	}
	return pay.ID
}

// checkConcurrentRetries sends one key's request several times at once, while PgBouncer
// has fewer server connections than there are requests: exactly one charge.
func checkConcurrentRetries(t *testing.T, c *apitest.Client, directPool *pgxpool.Pool) {
	t.Helper()
	const retries = 6
	body := map[string]any{"amount": 4242, "currency": "usd", "payment_method": "pm_card_visa"}
	key := apitest.Header("Idempotency-Key", "pgbouncer-concurrent")
	statuses := make([]int, retries)
	var wg sync.WaitGroup
	for i := range retries {
		wg.Go(func() { statuses[i] = c.Post("/payments", body, key).Status })
	}
	wg.Wait()
	created := 0
	for _, s := range statuses {
		switch s {
		case http.StatusCreated:
			created++
		case http.StatusConflict: // the first one was still in flight
		default:
			t.Errorf("a retry answered %d", s)
		}
	}
	if created == 0 {
		t.Errorf("no retry answered 201: %v", statuses)
	}
	if n := Count(t, directPool, `SELECT count(*) FROM payments WHERE amount = 4242`); n != 1 {
		t.Errorf("%d charges for one key, want 1", n)
	}
}

// checkRefund refunds part of the payment.
func checkRefund(t *testing.T, c *apitest.Client, paymentID string) {
	t.Helper()
	res := c.Post("/refunds", map[string]any{"payment_id": paymentID, "amount": 1200},
		apitest.Header("Idempotency-Key", "pgbouncer-refund"))
	if res.Status != http.StatusCreated {
		t.Errorf("refund: %d %s", res.Status, res.Body)
	}
	var pay struct {
		AmountRefunded int `json:"amount_refunded"`
	}
	c.Get("/payments/"+paymentID).Decode(t, &pay)
	if pay.AmountRefunded != 1200 {
		t.Errorf("amount_refunded %d, want 1200", pay.AmountRefunded)
	}
}

// checkReport builds a report to the end and downloads it.
func checkReport(t *testing.T, c *apitest.Client) {
	t.Helper()
	jobID := RequestReport(t, c)
	WaitForJob(t, c, jobID, "succeeded", 30*time.Second)
	var j struct {
		Result struct {
			DownloadURL string `json:"download_url"`
		} `json:"result"`
	}
	c.Get("/jobs/"+jobID).Decode(t, &j)
	if res := c.Get(j.Result.DownloadURL); res.Status != http.StatusOK || len(res.Body) == 0 {
		t.Errorf("download: %d %s", res.Status, res.Body)
	}
}

// checkWebhookDelivery creates an endpoint on a local receiver and waits for one delivery.
func checkWebhookDelivery(t *testing.T, c *apitest.Client) {
	t.Helper()
	got := make(chan []byte, 10)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		got <- body
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(receiver.Close)
	res := c.Post("/webhook-endpoints", map[string]any{"url": receiver.URL, "enabled_events": []string{"payment.succeeded"}})
	if res.Status != http.StatusCreated {
		t.Fatalf("create endpoint: %d %s", res.Status, res.Body)
	}
	body := map[string]any{"amount": 300, "currency": "usd", "payment_method": "pm_card_visa"}
	if res := c.Post("/payments", body, apitest.Header("Idempotency-Key", "pgbouncer-webhook")); res.Status != http.StatusCreated {
		t.Fatalf("create: %d %s", res.Status, res.Body)
	}
	select {
	case <-got:
	case <-time.After(15 * time.Second):
		t.Fatal("no webhook delivered within 15s")
	}
}
