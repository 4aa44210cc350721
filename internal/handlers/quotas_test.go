package handlers_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/payments-api/payments-api/internal/ratelimit"
	"github.com/payments-api/payments-api/internal/testing/apitest"
)

// throwawayWithQuotas creates an account with POST /test/accounts and the body's rate_limits,
// and returns a client with its key, its id, and the quotas the answer lists, as "policy" to
// {"quota", "window_seconds"}.
func throwawayWithQuotas(t *testing.T, c *apitest.Client, rateLimits map[string]any) (*apitest.Client, string, map[string]map[string]int) {
	t.Helper()
	res := c.Post("/test/accounts", map[string]any{"rate_limits": rateLimits}, apitest.NoAuth())
	if res.Status != http.StatusCreated {
		t.Fatalf("create test account: %d %s", res.Status, res.Body)
	}
	var acct struct {
		AccountID  string                    `json:"account_id"`
		APIKey     string                    `json:"api_key"`
		RateLimits map[string]map[string]int `json:"rate_limits"`
	}
	res.Decode(t, &acct)
	return c.WithKey(acct.APIKey), acct.AccountID, acct.RateLimits
}

// TestAccountsOwnQuotaLimitsThemOnly: a throwaway account that asked for a writes quota of 2
// per minute gets 429 on its third payment, with that quota in its RateLimit headers and
// problem, while another account, under the server's quota of 25 per second, does not.
func TestAccountsOwnQuotaLimitsThemOnly(t *testing.T) {
	t.Parallel()
	b := setup(t, withLimits(limits(ratelimit.NewMemory(), "1000/1m", "25/1s")))
	tight, _, quotas := throwawayWithQuotas(t, b.client, map[string]any{"writes": map[string]int{"quota": 2, "window_seconds": 60}})
	if w, d := quotas["writes"], quotas["default"]; w["quota"] != 2 || w["window_seconds"] != 60 || d["quota"] != 1000 || d["window_seconds"] != 60 {
		t.Errorf("rate_limits %v, want its own writes 2 per 60 s and the server's default 1000 per 60 s", quotas)
	}
	accounts := []struct {
		name           string
		client         *apitest.Client
		quota, window  int64
		refusedAtWrite int
	}{
		{"the account with its own quota", tight, 2, 60, 3},
		{"another account", b.client, 25, 1, 0},
	}
	for write := 1; write <= 3; write++ {
		for _, a := range accounts {
			res := a.client.Post("/payments", visa(100), apitest.Header("Idempotency-Key", newKey()))
			want := http.StatusCreated
			if write == a.refusedAtWrite {
				want = http.StatusTooManyRequests
			}
			if res.Status != want {
				t.Fatalf("write %d of %s: %d, want %d: %s", write, a.name, res.Status, want, res.Body)
			}
			policies, state := rateLimitHeaders(t, res)
			if policies["writes"]["q"] != a.quota || policies["writes"]["w"] != a.window || policies["default"]["q"] != 1000 {
				t.Errorf("write %d of %s: RateLimit-Policy %q, want writes q=%d w=%d", write, a.name, res.Header.Get("RateLimit-Policy"), a.quota, a.window)
			}
			// The server's bucket refills between two writes; the account's own, not in a minute.
			if left := max(0, a.quota-int64(write)); a.client == tight && state["writes"]["r"] != left {
				t.Errorf("write %d of %s: RateLimit %q, want writes r=%d", write, a.name, res.Header.Get("RateLimit"), left)
			}
			if res.Status == http.StatusTooManyRequests {
				if p := res.Problem(t); !slices.Equal(policyNames(p), []string{"writes"}) || res.Header.Get("Retry-After") != "30" {
					t.Errorf("429 %s with Retry-After %q, want writes violated and 30 s (one request of 2 per 60 s)", res.Body, res.Header.Get("Retry-After"))
				}
			}
		}
	}
	// Reads spend the server's default quota, which the account kept.
	if res := tight.Get("/payments"); res.Status != http.StatusOK {
		t.Errorf("a read after the writes quota is spent: %d", res.Status)
	}
}

// TestOwnQuotaAboveTheServersIsRefused: a throwaway account may ask for quotas up to the
// server's, and no higher: a larger quota, or a window too short for its quota, is a 400
// naming the field, and no account is made. The schema refuses what is malformed.
func TestOwnQuotaAboveTheServersIsRefused(t *testing.T) {
	t.Parallel()
	b := setup(t, withLimits(limits(ratelimit.NewMemory(), "100/1s", "20/1m")))
	quota := func(q, w int) map[string]int { return map[string]int{"quota": q, "window_seconds": w} }

	// Up to the server's own: the same quota, or a smaller one refilled no faster.
	_, _, quotas := throwawayWithQuotas(t, b.client, map[string]any{"default": quota(100, 1), "writes": quota(10, 30)})
	if quotas["default"]["quota"] != 100 || quotas["writes"]["quota"] != 10 || quotas["writes"]["window_seconds"] != 30 {
		t.Errorf("rate_limits %v, want default 100 per 1 s and writes 10 per 30 s", quotas)
	}

	before := b.count(t, `SELECT count(*) FROM accounts`)
	for _, tt := range []struct {
		name       string
		rateLimits map[string]any
		field      string
	}{
		{"a larger writes quota", map[string]any{"writes": quota(21, 3600)}, "/rate_limits/writes/quota"},
		{"a larger default quota", map[string]any{"default": quota(101, 60)}, "/rate_limits/default/quota"},
		{"the same quota refilled faster", map[string]any{"writes": quota(20, 30)}, "/rate_limits/writes/window_seconds"},
		{"a zero quota", map[string]any{"writes": quota(0, 60)}, "/rate_limits/writes/quota"},
		{"no window", map[string]any{"writes": map[string]int{"quota": 1}}, "/rate_limits/writes/window_seconds"},
		{"a policy that is not per account", map[string]any{"unauthenticated": quota(1, 60)}, "/rate_limits/unauthenticated"},
	} {
		res := b.client.Post("/test/accounts", map[string]any{"rate_limits": tt.rateLimits}, apitest.NoAuth())
		if res.Status != http.StatusBadRequest {
			t.Errorf("%s: %d, want 400: %s", tt.name, res.Status, res.Body)
			continue
		}
		p := res.Problem(t)
		if len(p.Errors) == 0 || p.Errors[0]["field"] != tt.field {
			t.Errorf("%s: errors %v, want the field %s", tt.name, p.Errors, tt.field)
		}
	}
	res := b.client.Post("/test/accounts", map[string]any{"rate_limits": map[string]any{"writes": quota(20, 30)}}, apitest.NoAuth())
	if p := res.Problem(t); len(p.Errors) > 0 {
		msg, _ := p.Errors[0]["message"].(string)
		if !strings.Contains(msg, "at least 60") || !strings.Contains(msg, "20 requests per 60 seconds") {
			t.Errorf("refill too fast: message %q, want the shortest window (60) and the server's quota", msg)
		}
	}
	if after := b.count(t, `SELECT count(*) FROM accounts`); after != before {
		t.Errorf("%d accounts made by refused requests", after-before)
	}
}

// TestOwnQuotaAboveTheServersGivesWay: a quota stored when the server allowed more (it has
// been reconfigured since) is not used: the server's applies, so no account is ever limited
// less than the server limits every account.
func TestOwnQuotaAboveTheServersGivesWay(t *testing.T) {
	t.Parallel()
	b := setup(t, withLimits(limits(ratelimit.NewMemory(), "100/1s", "20/1m")))
	acct, id, _ := throwawayWithQuotas(t, b.client, map[string]any{"writes": map[string]int{"quota": 10, "window_seconds": 30}})
	// Before the account's first request, so that no server has its row cached.
	b.count(t, `WITH u AS (UPDATE accounts SET rate_limit_writes_quota = 1000 WHERE id = $1 RETURNING 1) SELECT count(*) FROM u`, id)
	res := acct.Post("/payments", visa(100), apitest.Header("Idempotency-Key", newKey()))
	if policies, _ := rateLimitHeaders(t, res); policies["writes"]["q"] != 20 || policies["writes"]["w"] != 60 {
		t.Errorf("RateLimit-Policy %q, want the server's writes quota, 20 per 60 s", res.Header.Get("RateLimit-Policy"))
	}
}
