package handlers_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/payments-api/payments-api/internal/app"
	"github.com/payments-api/payments-api/internal/ratelimit"
	"github.com/payments-api/payments-api/internal/testing/apitest"
)

// sendRaw posts body to the server outside apitest, on a connection of its own: a test that
// expects no answer at all needs the transport error, which apitest would report as a
// failure. Keep-alives are off because Go's transport resends by itself, once, a request
// that carries Idempotency-Key when a reused connection closes without an answer.
func sendRaw(t *testing.T, url string, body []byte, header http.Header) (status int, err error) {
	t.Helper()
	client := &http.Client{Timeout: apitest.RequestTimeout, Transport: &http.Transport{DisableKeepAlives: true}}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = header
	res, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, res.Body)
	return res.StatusCode, res.Body.Close()
}

// TestLostResponseCommitsAndTheRetryReplays is the opening story of idempotency on demand:
// the payment is made and committed, the client sees only a closed connection, and the retry
// with the same key gets the 201 that was stored, byte for byte, without a second payment.
func TestLostResponseCommitsAndTheRetryReplays(t *testing.T) {
	t.Parallel()
	b := setup(t)
	key := newKey()
	body, err := json.Marshal(visa(4200))
	if err != nil {
		t.Fatal(err)
	}
	header := http.Header{
		"Authorization":   {"Bearer " + testKey},
		"Content-Type":    {"application/json"},
		"Idempotency-Key": {key},
		"Prefer":          {"fault=lost-response"},
	}
	if status, err := sendRaw(t, b.client.BaseURL+"/payments", body, header); err == nil {
		t.Fatalf("the lost response arrived: %d", status)
	}
	if n := b.count(t, `SELECT count(*) FROM payments`); n != 1 {
		t.Fatalf("%d payments after the lost response, want 1", n)
	}
	var stored []byte
	if err := b.pool.QueryRow(context.Background(), `SELECT response_body FROM idempotency_keys WHERE key = $1`, key).Scan(&stored); err != nil {
		t.Fatal(err)
	}

	retry := b.client.Post("/payments", body, apitest.Header("Idempotency-Key", key))
	if retry.Status != http.StatusCreated || retry.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("retry: %d Idempotent-Replayed %q, want a replayed 201", retry.Status, retry.Header.Get("Idempotent-Replayed"))
	}
	if !bytes.Equal(retry.Body, stored) {
		t.Errorf("retry body\n%s\nis not the stored response\n%s", retry.Body, stored)
	}
	again := b.client.Post("/payments", body, apitest.Header("Idempotency-Key", key))
	if !bytes.Equal(again.Body, retry.Body) || again.Header.Get("ETag") != retry.Header.Get("ETag") || again.Header.Get("Location") != retry.Header.Get("Location") {
		t.Errorf("two replays differ:\n%s %v\n%s %v", retry.Body, retry.Header, again.Body, again.Header)
	}
	if n := b.count(t, `SELECT count(*) FROM payments`); n != 1 {
		t.Errorf("%d payments after the retries, want 1", n)
	}
	if !strings.Contains(b.logs.String(), `"response_dropped":true`) {
		t.Errorf("the request log does not say the response was dropped:\n%s", b.logs.String())
	}
}

// TestErrorBeforeStoresNothing: the injected 503 comes before any work, so nothing is
// stored, the key stays free and the retry creates the payment.
func TestErrorBeforeStoresNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	key := newKey()
	res := b.client.Post("/payments", visa(100), apitest.Header("Idempotency-Key", key), apitest.Header("Prefer", "fault=error-before"))
	if p := res.Problem(t); res.Status != http.StatusServiceUnavailable || p.Type != "/problems/service-unavailable" {
		t.Fatalf("%d %s, want 503 service-unavailable", res.Status, p.Type)
	}
	if res.Header.Get("Retry-After") != "1" || res.Header.Get("Preference-Applied") != "fault=error-before" {
		t.Errorf("Retry-After %q, Preference-Applied %q", res.Header.Get("Retry-After"), res.Header.Get("Preference-Applied"))
	}
	for _, table := range []string{"payments", "idempotency_keys", "events"} {
		if n := b.count(t, `SELECT count(*) FROM `+table); n != 0 {
			t.Errorf("%d rows in %s after error-before", n, table)
		}
	}
	retry := b.client.Post("/payments", visa(100), apitest.Header("Idempotency-Key", key))
	if retry.Status != http.StatusCreated || retry.Header.Get("Idempotent-Replayed") != "" {
		t.Errorf("retry: %d Idempotent-Replayed %q, want a new 201", retry.Status, retry.Header.Get("Idempotent-Replayed"))
	}
}

// TestRateLimitedIsTheLimitersOwn429: the injected 429 is the one the rate limiter sends when
// the writes quota is used up: the same body (request id aside) and the same headers.
func TestRateLimitedIsTheLimitersOwn429(t *testing.T) {
	t.Parallel()
	limits := generousLimits()
	limits.Writes = ratelimit.Policy{Name: "writes", Rate: ratelimit.Rate{Quota: 1, Window: time.Minute}}
	b := setup(t, withLimits(limits))

	injected := b.client.Post("/payments", visa(100), apitest.Header("Idempotency-Key", newKey()), apitest.Header("Prefer", "fault=rate-limited"))
	if injected.Status != http.StatusTooManyRequests || injected.Header.Get("Preference-Applied") != "fault=rate-limited" {
		t.Fatalf("injected: %d Preference-Applied %q", injected.Status, injected.Header.Get("Preference-Applied"))
	}
	// The injected refusal came after the limiter, which counted the request: the quota of
	// one is used up, and the next request meets the real refusal.
	real := b.client.Post("/payments", visa(100), apitest.Header("Idempotency-Key", newKey()))
	if real.Status != http.StatusTooManyRequests {
		t.Fatalf("real: %d, want 429", real.Status)
	}
	injectedBody, realBody := injected.Problem(t).Raw, real.Problem(t).Raw
	delete(injectedBody, "request_id")
	delete(realBody, "request_id")
	if !maps.EqualFunc(injectedBody, realBody, func(a, b any) bool { return slices.Equal(toStrings(a), toStrings(b)) }) {
		t.Errorf("injected 429 %v\nreal 429 %v", injectedBody, realBody)
	}
	for _, name := range []string{"Retry-After", "RateLimit-Policy"} {
		if injected.Header.Get(name) != real.Header.Get(name) {
			t.Errorf("%s: injected %q, real %q", name, injected.Header.Get(name), real.Header.Get(name))
		}
	}
	if _, state := rateLimitHeaders(t, injected); state["writes"]["r"] != 0 {
		t.Errorf("injected RateLimit shows %d writes left, want 0", state["writes"]["r"])
	}
	if n := b.count(t, `SELECT count(*) FROM payments`); n != 0 {
		t.Errorf("%d payments after two 429s", n)
	}
}

// TestRateLimitedWithRateLimitsOff: with rate limits turned off (no Limiter, as
// RATE_LIMIT_DISABLED=true) Prefer: fault=rate-limited still answers 429, so a client's 429
// test cannot pass without one. Nothing is counted, so it names the default policy, at the
// configured quota or the account's own, shown empty; requests without it pass, with no
// rate-limit headers.
func TestRateLimitedWithRateLimitsOff(t *testing.T) {
	t.Parallel()
	off := limits(nil, "100/1s", "25/1s")
	b := setup(t, withLimits(off))
	own, _, _ := throwawayWithQuotas(t, b.client, map[string]any{"default": map[string]int{"quota": 5, "window_seconds": 10}})
	for _, tt := range []struct {
		name          string
		client        *apitest.Client
		policy, state string
		retryAfter    string
	}{
		{"the server's quota", b.client, `"default";q=100;w=1`, `"default";r=0;t=1`, "1"},
		{"an account's own quota", own, `"default";q=5;w=10`, `"default";r=0;t=10`, "2"},
	} {
		res := tt.client.Post("/payments", visa(100), apitest.Header("Idempotency-Key", newKey()), apitest.Header("Prefer", "fault=rate-limited"))
		if res.Status != http.StatusTooManyRequests || res.Header.Get("Preference-Applied") != "fault=rate-limited" {
			t.Fatalf("%s: %d Preference-Applied %q, want 429 fault=rate-limited: %s", tt.name, res.Status, res.Header.Get("Preference-Applied"), res.Body)
		}
		if p := res.Problem(t); p.Type != "/problems/rate-limited" || !slices.Equal(policyNames(p), []string{"default"}) {
			t.Errorf("%s: problem %s, want default violated", tt.name, res.Body)
		}
		got := []string{res.Header.Get("RateLimit-Policy"), res.Header.Get("RateLimit"), res.Header.Get("Retry-After")}
		if want := []string{tt.policy, tt.state, tt.retryAfter}; !slices.Equal(got, want) {
			t.Errorf("%s: RateLimit-Policy, RateLimit, Retry-After %q, want %q", tt.name, got, want)
		}
	}
	res := b.client.Post("/payments", visa(100), apitest.Header("Idempotency-Key", newKey()))
	if res.Status != http.StatusCreated || res.Header.Get("RateLimit") != "" {
		t.Errorf("without the fault: %d RateLimit %q, want 201 and no rate-limit headers", res.Status, res.Header.Get("RateLimit"))
	}
	if n := b.count(t, `SELECT count(*) FROM payments`); n != 1 {
		t.Errorf("%d payments, want only the one sent without the fault", n)
	}
}

func toStrings(v any) []string {
	if list, ok := v.([]any); ok {
		out := make([]string, len(list))
		for i, x := range list {
			out[i], _ = x.(string)
		}
		return out
	}
	b, _ := json.Marshal(v)
	return []string{string(b)}
}

// TestLatencyHoldsTheAnswer: the answer comes after the injected latency, says so in
// Preference-Applied and in Server-Timing, and the work is done.
func TestLatencyHoldsTheAnswer(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const latency = 300 * time.Millisecond
	start := time.Now()
	res := b.client.Post("/payments", visa(100), apitest.Header("Idempotency-Key", newKey()),
		apitest.Header("Prefer", "respond-async, latency=300ms;unused=1, fault=error-before"))
	if took := time.Since(start); took < latency {
		t.Errorf("answered after %s, before the %s asked for", took, latency)
	}
	if res.Status != http.StatusServiceUnavailable || res.Header.Get("Preference-Applied") != "fault=error-before, latency=300ms" {
		t.Errorf("%d Preference-Applied %q, want a slow 503", res.Status, res.Header.Get("Preference-Applied"))
	}
	if dur := serverTiming(t, res)["latency"]; dur < float64(latency.Milliseconds()) {
		t.Errorf("Server-Timing latency %.1f ms, want at least %d", dur, latency.Milliseconds())
	}
	slow := b.client.Get("/account", apitest.Header("Prefer", `latency="50ms"`))
	if slow.Status != http.StatusOK || slow.Header.Get("Preference-Applied") != "latency=50ms" {
		t.Errorf("GET /account: %d Preference-Applied %q", slow.Status, slow.Header.Get("Preference-Applied"))
	}
}

// TestPreferIsCheckedAndOtherwiseIgnored: a fault or latency the server cannot honour is a 400
// naming Prefer; preferences it does not know are ignored, as RFC 7240 says.
func TestPreferIsCheckedAndOtherwiseIgnored(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, prefer := range []string{"fault=explode", "fault", "latency=31s", "latency=fast", "latency=-1s", "fault=Lost-Response"} {
		res := b.client.Get("/account", apitest.Header("Prefer", prefer))
		p := res.Problem(t)
		if res.Status != http.StatusBadRequest || len(p.Errors) != 1 || p.Errors[0]["field"] != "Prefer" {
			t.Errorf("Prefer: %s: %d %v, want a 400 naming Prefer", prefer, res.Status, p.Errors)
		}
	}
	for _, prefer := range []string{"respond-async", "return=minimal, wait=10", "handling=strict", "Fault=error-before, fault=explode"} {
		res := b.client.Get("/account", apitest.Header("Prefer", prefer))
		want, applied := http.StatusOK, ""
		if strings.HasPrefix(prefer, "Fault") { // the first instance counts; names ignore case
			want, applied = http.StatusServiceUnavailable, "fault=error-before"
		}
		if res.Status != want || res.Header.Get("Preference-Applied") != applied {
			t.Errorf("Prefer: %s: %d Preference-Applied %q, want %d %q", prefer, res.Status, res.Header.Get("Preference-Applied"), want, applied)
		}
	}
	if res := b.client.Get("/healthz", apitest.Header("Prefer", "fault=error-before")); res.Status != http.StatusOK {
		t.Errorf("GET /healthz with a fault: %d; operations without a key take no faults", res.Status)
	}
}

// TestFaultInjectionOff: FAULT_INJECTION=false ignores every preference.
func TestFaultInjectionOff(t *testing.T) {
	t.Parallel()
	c := setup(t, withConfig(func(c *app.Config) { c.FaultInjection = false })).client
	for _, prefer := range []string{"fault=error-before", "fault=explode"} {
		res := c.Post("/payments", visa(100), apitest.Header("Idempotency-Key", newKey()), apitest.Header("Prefer", prefer))
		if res.Status != http.StatusCreated || res.Header.Get("Preference-Applied") != "" {
			t.Errorf("Prefer: %s with fault injection off: %d Preference-Applied %q", prefer, res.Status, res.Header.Get("Preference-Applied"))
		}
	}
}
