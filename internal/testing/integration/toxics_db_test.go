package integration

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/payments-api/payments-api/internal/testing/apitest"
	"github.com/payments-api/payments-api/internal/testing/dbtest"
)

const paymentBody = `{"amount":100,"currency":"usd","payment_method":"pm_card_visa"}`

// startBehindToxics runs the server with PostgreSQL behind a Toxiproxy proxy. The API-key
// cache is off, so every request needs the database; only the API runs, so no worker's
// query shares the path with the request under test.
// It returns the database's own URL too, for the test to look behind the proxy.
func startBehindToxics(t *testing.T, env map[string]string) (*Server, *toxicProxy, string) {
	t.Helper()
	direct := dbtest.NewURL(t)
	proxy, url := newDBToxicProxy(t, direct)
	env["DATABASE_URL"] = url
	env["API_KEY_CACHE_TTL"] = "0s"
	env["PROCESS_ROLE"] = roleAPI
	return startServer(t, env), proxy, direct
}

// timed sends one request and returns its answer and how long it took.
func timed(t *testing.T, r *Server, method, path, body, key string) (*apitest.Response, time.Duration) {
	t.Helper()
	start := time.Now()
	res := send(t, r, method, path, body, key)
	return res, time.Since(start)
}

// TestDatabaseLatency: a slow path to PostgreSQL makes requests slower but still correct;
// once it is slower than REQUEST_TIMEOUT, the answer is 503 with Retry-After at the deadline.
// loadedSlack is how much later than REQUEST_TIMEOUT an answer may arrive and still count as
// bounded by it: on a loaded 2-core machine (CI runs the packages' tests in parallel) a
// request has waited over 2 s for a core before the server began it, while the server
// still answered it in REQUEST_TIMEOUT. Unbounded, these requests would take 6 s or more
// (two round trips of 3 s), or never be answered.
const loadedSlack = 3 * time.Second

func TestDatabaseLatency(t *testing.T) {
	t.Parallel()
	const requestTimeout = time.Second
	r, proxy, _ := startBehindToxics(t, map[string]string{"REQUEST_TIMEOUT": requestTimeout.String(), "WRITE_TIMEOUT": "5s"})

	proxy.Add("latency", "downstream", map[string]any{"latency": 20})
	res, took := timed(t, r, http.MethodPost, "/payments", paymentBody, "latency-1")
	if res.Status != http.StatusCreated || took < 40*time.Millisecond {
		t.Errorf("with 20 ms per answer: %d after %s, want 201 after several round trips", res.Status, took)
	}

	proxy.Remove()
	proxy.Add("latency", "downstream", map[string]any{"latency": 3000})
	res, took = timed(t, r, http.MethodPost, "/payments", paymentBody, "latency-2")
	res.WantUnavailable(t, "with 3 s per answer")
	if took < requestTimeout*9/10 || took > requestTimeout+loadedSlack {
		t.Errorf("with 3 s per answer: answered after %s, want about REQUEST_TIMEOUT (%s)", took, requestTimeout)
	}

	proxy.Remove()
	WaitFor(t, func() bool {
		return send(t, r, http.MethodPost, "/payments", paymentBody, "latency-2").Status == http.StatusCreated
	})
}

// TestDatabaseBandwidthLimit: a narrow path to PostgreSQL slows requests down without
// changing their answers.
func TestDatabaseBandwidthLimit(t *testing.T) {
	t.Parallel()
	r, proxy, _ := startBehindToxics(t, map[string]string{})
	proxy.Add("bandwidth", "downstream", map[string]any{"rate": 4}) // KB/s
	proxy.Add("bandwidth", "upstream", map[string]any{"rate": 4})

	res, took := timed(t, r, http.MethodPost, "/payments", paymentBody, "bandwidth-1")
	if res.Status != http.StatusCreated {
		t.Fatalf("POST /payments at 4 KB/s: %d %s", res.Status, res.Body)
	}
	if took < 100*time.Millisecond {
		t.Errorf("POST /payments at 4 KB/s took %s: the limit did not apply", took)
	}
	if got := send(t, r, http.MethodGet, "/payments?limit=10", "", ""); got.Status != http.StatusOK {
		t.Errorf("GET /payments at 4 KB/s: %d %s", got.Status, got.Body)
	}
}

// TestDatabaseResetPeer: connections to PostgreSQL reset by the network answer 503 with
// Retry-After (not 500); once the network heals, the server serves again without a restart
// and the retried payment is created, once.
func TestDatabaseResetPeer(t *testing.T) {
	t.Parallel()
	r, proxy, direct := startBehindToxics(t, map[string]string{})
	proxy.Add("reset_peer", "upstream", map[string]any{"timeout": 0})

	for _, req := range []struct{ method, path, body string }{
		{http.MethodGet, "/account", ""},
		{http.MethodPost, "/payments", paymentBody},
	} {
		send(t, r, req.method, req.path, req.body, "reset-1").WantUnavailable(t, "reset: "+req.method+" "+req.path)
	}
	if r.Logged(`"level":"ERROR"`) {
		t.Errorf("a reset connection is not an internal error, yet ERROR was logged:\n%s", r.Logs())
	}

	proxy.Remove()
	WaitFor(t, func() bool { return send(t, r, http.MethodGet, "/account", "", "").Status == http.StatusOK })
	if res := send(t, r, http.MethodPost, "/payments", paymentBody, "reset-1"); res.Status != http.StatusCreated {
		t.Errorf("the retried payment after recovery: %d %s", res.Status, res.Body)
	}
	conn, err := pgx.Connect(t.Context(), direct)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.WithoutCancel(t.Context()))
	if n := countPayments(t.Context(), t, conn); n != 1 {
		t.Errorf("%d payments after the retry, want 1", n)
	}
}

// TestDatabaseTimeout: a path to PostgreSQL that swallows everything and never closes
// answers 503 with Retry-After within REQUEST_TIMEOUT, then recovers when it heals.
func TestDatabaseTimeout(t *testing.T) {
	t.Parallel()
	const requestTimeout = time.Second
	r, proxy, _ := startBehindToxics(t, map[string]string{"REQUEST_TIMEOUT": requestTimeout.String(), "WRITE_TIMEOUT": "5s"})
	proxy.Add("timeout", "upstream", map[string]any{"timeout": 0}) // never closes

	for _, req := range []struct{ method, path, body string }{
		{http.MethodGet, "/account", ""},
		{http.MethodPost, "/payments", paymentBody},
	} {
		res, took := timed(t, r, req.method, req.path, req.body, "timeout-1")
		res.WantUnavailable(t, "timeout: "+req.method+" "+req.path)
		if took > requestTimeout+loadedSlack {
			t.Errorf("timeout: %s %s answered after %s, want within REQUEST_TIMEOUT (%s)", req.method, req.path, took, requestTimeout)
		}
	}

	proxy.Remove()
	WaitFor(t, func() bool { return send(t, r, http.MethodGet, "/account", "", "").Status == http.StatusOK })
	if res := send(t, r, http.MethodPost, "/payments", paymentBody, "timeout-1"); res.Status != http.StatusCreated {
		t.Errorf("the retried payment after recovery: %d %s", res.Status, res.Body)
	}
}
