package handlers_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/payments-api/payments-api/internal/testing/apitest"
)

func TestAuthentication(t *testing.T) {
	t.Parallel()
	b := setup(t)
	revoked := "sk_test_revoked_key"
	b.seedRevokedKey(t, revoked)

	tests := []struct {
		name string
		opt  apitest.Option
	}{
		{"no Authorization header", apitest.NoAuth()},
		{"wrong scheme", apitest.Header("Authorization", "Basic "+testKey)},
		{"empty bearer", apitest.Header("Authorization", "Bearer ")},
		{"unknown key", apitest.Header("Authorization", "Bearer sk_test_nobody")},
		{"revoked key", apitest.Header("Authorization", "Bearer "+revoked)},
		// Two fields name no one key, though the first is good: neither is taken.
		{"a good key and another", func(r *http.Request) { r.Header.Add("Authorization", "Bearer sk_test_nobody") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := b.client.Get("/account", tt.opt)
			if res.Status != http.StatusUnauthorized {
				t.Fatalf("status %d, want 401", res.Status)
			}
			if got := res.Header.Get("WWW-Authenticate"); !strings.HasPrefix(got, "Bearer") {
				t.Errorf("WWW-Authenticate %q, want Bearer", got)
			}
			if p := res.Problem(t); p.Type != "/problems/unauthorized" {
				t.Errorf("type %q", p.Type)
			}
		})
	}

	t.Run("valid key, scheme in any case", func(t *testing.T) {
		var one, two struct{ ID string }
		b.client.Get("/account", apitest.Header("Authorization", "bearer "+testKey)).Decode(t, &one)
		b.other.Get("/account").Decode(t, &two)
		if !strings.HasPrefix(one.ID, "acct_") || one.ID == two.ID {
			t.Errorf("accounts %q and %q: want two distinct acct_ ids", one.ID, two.ID)
		}
	})
	t.Run("valid key after more than one space", func(t *testing.T) { // 1*SP, RFC 6750 section 2.1
		if res := b.client.Get("/account", apitest.Header("Authorization", "Bearer   "+testKey)); res.Status != http.StatusOK {
			t.Errorf("three spaces: %d %s", res.Status, res.Body)
		}
	})
	t.Run("public operations need no key", func(t *testing.T) {
		for _, path := range []string{"/healthz", "/readyz", "/openapi.yaml", "/openapi.json", "/problems/not-found", "/docs", "/"} {
			if res := b.client.Get(path, apitest.NoAuth()); res.Status != http.StatusOK {
				t.Errorf("GET %s: %d", path, res.Status)
			}
		}
	})
}

func (b *testBundle) seedRevokedKey(t *testing.T, key string) {
	t.Helper()
	ctx := context.Background()
	if _, err := b.pool.Exec(ctx, `
		INSERT INTO api_keys (id, account_id, key_hash, prefix, revoked_at)
		SELECT 'key_revoked', id, sha256($1::bytea), 'sk_test_', now() FROM accounts LIMIT 1`, key); err != nil {
		t.Fatal(err)
	}
}

func TestRequestID(t *testing.T) {
	t.Parallel()
	b := setup(t)
	generated := regexp.MustCompile(`^req_[A-Z2-7]{26}$`)

	t.Run("generated when absent", func(t *testing.T) {
		res := b.client.Get("/account")
		if id := res.Header.Get("Request-Id"); !generated.MatchString(id) {
			t.Errorf("Request-Id %q", id)
		}
	})
	t.Run("a sane incoming id is kept, in the header and the problem", func(t *testing.T) {
		res := b.client.Get("/payments-nowhere", apitest.Header("Request-Id", "client-42.retry:1"))
		if id := res.Header.Get("Request-Id"); id != "client-42.retry:1" {
			t.Errorf("Request-Id %q", id)
		}
		if got := res.Problem(t).Raw["request_id"]; got != "client-42.retry:1" {
			t.Errorf("problem request_id %v", got)
		}
	})
	t.Run("an unsafe incoming id is replaced", func(t *testing.T) {
		for _, bad := range []string{"has space", strings.Repeat("a", 129), "quote\"d", "<script>"} {
			res := b.client.Get("/account", apitest.Header("Request-Id", bad))
			if id := res.Header.Get("Request-Id"); !generated.MatchString(id) {
				t.Errorf("incoming %q: Request-Id %q", bad, id)
			}
		}
	})
}

func TestRoutingProblems(t *testing.T) {
	t.Parallel()
	b := setup(t)

	res := b.client.Get("/no/such/route")
	if res.Status != http.StatusNotFound || res.Problem(t).Type != "/problems/not-found" {
		t.Errorf("unknown route: %d %s", res.Status, res.Body)
	}
	res = b.client.Do(http.MethodPut, "/account", nil)
	if res.Status != http.StatusMethodNotAllowed || res.Problem(t).Type != "/problems/method-not-allowed" {
		t.Errorf("wrong method: %d %s", res.Status, res.Body)
	}
	if allow := res.Header.Get("Allow"); !strings.Contains(allow, "GET") {
		t.Errorf("Allow %q, want GET listed", allow)
	}
	// A wrong method on a public path is 405 even without a key.
	if res := b.client.Do(http.MethodPost, "/healthz", nil, apitest.NoAuth()); res.Status != http.StatusMethodNotAllowed {
		t.Errorf("POST /healthz: %d", res.Status)
	}
}

func TestPanicBecomesAnOpaqueProblem(t *testing.T) {
	t.Parallel()
	b := setup(t)
	// Middleware added after New still runs inside Recover: it stands in for a handler bug.
	b.echo.Use(func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if c.Request().Header.Get("X-Test-Panic") != "" {
				panic("boom: secret internals")
			}
			return next(c)
		}
	})

	res := b.client.Get("/account", apitest.Header("X-Test-Panic", "1"), apitest.Header("Request-Id", "panic-1"))
	if res.Status != http.StatusInternalServerError || res.Problem(t).Type != "/problems/internal-error" {
		t.Fatalf("%d %s", res.Status, res.Body)
	}
	if strings.Contains(string(res.Body), "secret") {
		t.Errorf("the problem leaks the panic: %s", res.Body)
	}
	logs := b.logs.String()
	if !strings.Contains(logs, `"msg":"panic"`) || !strings.Contains(logs, "boom: secret internals") || !strings.Contains(logs, `"request_id":"panic-1"`) {
		t.Errorf("the panic is not logged with its request id:\n%s", logs)
	}
	// The server keeps serving.
	if res := b.client.Get("/account"); res.Status != http.StatusOK {
		t.Errorf("after the panic: %d", res.Status)
	}
}

func TestReadiness(t *testing.T) {
	t.Parallel()
	b := setup(t)
	if res := b.client.Get("/readyz"); res.Status != http.StatusOK {
		t.Errorf("healthy database: %d %s", res.Status, res.Body)
	}

	down := setup(t, withUnreachableDatabase())
	res := down.client.Get("/readyz")
	if res.Status != http.StatusServiceUnavailable || res.Problem(t).Type != "/problems/service-unavailable" {
		t.Errorf("unreachable database: %d %s", res.Status, res.Body)
	}
	if res.Header.Get("Retry-After") == "" {
		t.Error("503 without Retry-After")
	}
	if res := down.client.Get("/healthz"); res.Status != http.StatusOK {
		t.Errorf("liveness must not depend on the database: %d", res.Status)
	}
}

// TestReadyWhileEveryConnectionIsBusy: a process whose pool is all lent out to requests
// (slow charges, say) is at work, not broken; /readyz asks the database over a connection of
// its own, so a load balancer does not take every process out at once under load.
func TestReadyWhileEveryConnectionIsBusy(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for range b.pool.Config().MaxConns {
		conn, err := b.pool.Acquire(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Release()
	}
	if res := b.client.Get("/readyz"); res.Status != http.StatusOK {
		t.Errorf("every pooled connection busy: %d %s", res.Status, res.Body)
	}
}

func TestServesItsContract(t *testing.T) {
	t.Parallel()
	b := setup(t)
	want, err := os.ReadFile("../../api/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	res := b.client.Get("/openapi.yaml")
	if string(res.Body) != string(want) {
		t.Error("GET /openapi.yaml differs from api/openapi.yaml")
	}
	var doc map[string]any
	b.client.Get("/openapi.json").Decode(t, &doc)
	if doc["openapi"] != "3.1.0" {
		t.Errorf("openapi.json: openapi = %v", doc["openapi"])
	}
}

func TestProblemTypePages(t *testing.T) {
	t.Parallel()
	b := setup(t)
	// Every problem type the spec lists must resolve to a page.
	types := regexp.MustCompile("`/problems/([a-z-]+)`").FindAllStringSubmatch(string(mustRead(t, "../../api/openapi.yaml")), -1)
	if len(types) < 9 {
		t.Fatalf("found only %d problem types in the spec", len(types))
	}
	for _, m := range types {
		res := b.client.Get("/problems/"+m[1], apitest.NoAuth())
		if res.Status != http.StatusOK || !strings.Contains(res.Header.Get("Content-Type"), "text/html") {
			t.Errorf("/problems/%s: %d %s", m[1], res.Status, res.Header.Get("Content-Type"))
		}
	}
	if res := b.client.Get("/problems/no-such-problem"); res.Status != http.StatusNotFound {
		t.Errorf("unknown problem type: %d", res.Status)
	}
	if res := b.client.Get("/problems/NOT_A_SLUG"); res.Status != http.StatusBadRequest {
		t.Errorf("malformed problem slug: %d", res.Status)
	}
}

func TestOneLogLinePerRequest(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.client.Get("/account", apitest.Header("Request-Id", "log-line-1"))

	var line map[string]any
	deadline := time.Now().Add(2 * time.Second)
	for line == nil && time.Now().Before(deadline) {
		for _, l := range strings.Split(b.logs.String(), "\n") {
			if strings.Contains(l, `"request_id":"log-line-1"`) {
				if err := json.Unmarshal([]byte(l), &line); err != nil {
					t.Fatal(err)
				}
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	if line == nil {
		t.Fatalf("no log line for the request:\n%s", b.logs.String())
	}
	for _, key := range []string{"method", "route", "status", "duration", "account"} {
		if _, ok := line[key]; !ok {
			t.Errorf("log line lacks %q: %v", key, line)
		}
	}
	if line["route"] != "/account" || line["status"] != float64(200) {
		t.Errorf("log line %v", line)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestServesItsReference checks GET /docs and GET / serve the rendered contract as one page
// that loads nothing from elsewhere: no external script, stylesheet, font or image.
func TestServesItsReference(t *testing.T) {
	t.Parallel()
	b := setup(t)
	external := regexp.MustCompile(`(?i)<(script|link|img|iframe)\b[^>]*\b(src|href)\s*=\s*["']?(https?:)?//`)
	for _, path := range []string{"/docs", "/"} {
		res := b.client.Get(path, apitest.NoAuth())
		if res.Status != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") {
			t.Fatalf("GET %s: %d %s", path, res.Status, res.Header.Get("Content-Type"))
		}
		page := string(res.Body)
		if !strings.Contains(page, "<title>payments-api</title>") || !strings.Contains(page, "createPayment") {
			t.Errorf("GET %s is not the reference of this contract", path)
		}
		if m := external.FindString(page); m != "" {
			t.Errorf("GET %s loads from elsewhere: %s", path, m)
		}
	}
}
