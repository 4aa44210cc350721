package handlers_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dunglas/httpsfv"
	"github.com/payments-api/payments-api/internal/api"
	"github.com/payments-api/payments-api/internal/app"
	"github.com/payments-api/payments-api/internal/ratelimit"
	"github.com/payments-api/payments-api/internal/testing/apitest"
	"github.com/payments-api/payments-api/internal/testing/redistest"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// limits is a RateLimits on limiter with the given rates, and a generous unauthenticated one
// unless the test sets it.
func limits(limiter ratelimit.Limiter, reads, writes string) *ratelimit.Limits {
	return &ratelimit.Limits{
		Limiter:         limiter,
		Default:         ratelimit.Policy{Name: "default", Rate: mustRate(reads)},
		Writes:          ratelimit.Policy{Name: "writes", Rate: mustRate(writes)},
		Unauthenticated: ratelimit.Policy{Name: "unauthenticated", Rate: mustRate("1000/1s")},
	}
}

func mustRate(s string) ratelimit.Rate {
	r, err := ratelimit.ParseRate(s)
	if err != nil {
		panic(err)
	}
	return r
}

// rateLimitHeaders parses RateLimit-Policy and RateLimit as the structured-field lists
// draft-ietf-httpapi-ratelimit-headers-11 defines, keyed by policy name, and fails the test
// on any syntax or parameter the draft does not allow.
func rateLimitHeaders(t *testing.T, res *apitest.Response) (policies, state map[string]map[string]int64) {
	t.Helper()
	return sfList(t, res, "RateLimit-Policy", "q", "w"), sfList(t, res, "RateLimit", "r", "t")
}

func sfList(t *testing.T, res *apitest.Response, field string, params ...string) map[string]map[string]int64 {
	t.Helper()
	list, err := httpsfv.UnmarshalList(res.Header.Values(field))
	if err != nil || len(list) == 0 {
		t.Fatalf("%s %q is not a non-empty structured-field list: %v", field, res.Header.Values(field), err)
	}
	byName := map[string]map[string]int64{}
	for _, member := range list {
		item, ok := member.(httpsfv.Item)
		name, isString := item.Value.(string)
		if !ok || !isString {
			t.Fatalf("%s member %v is not an item whose value is a policy name string", field, member)
		}
		byName[name] = map[string]int64{}
		for _, p := range params {
			v, ok := item.Params.Get(p)
			n, isInt := v.(int64)
			if !ok || !isInt || n < 0 {
				t.Fatalf("%s %q: parameter %s is missing or not a non-negative integer", field, name, p)
			}
			byName[name][p] = n
		}
	}
	return byName
}

func TestRateLimitWritesBurst(t *testing.T) {
	t.Parallel()
	const quota = 5
	// A 15 s window refills one request every 3 s: long enough that none refills during the
	// burst, short enough to wait for Retry-After.
	b := setup(t, withLimits(limits(ratelimit.NewMemory(), "1000/1m", "5/15s")))

	keys := make([]string, quota+3)
	for i := range keys {
		keys[i] = newKey()
	}
	responses := concurrently(len(keys), func(i int) *apitest.Response {
		return b.client.Post("/payments", visa(100), apitest.Header("Idempotency-Key", keys[i]))
	})
	var remaining []int64
	var refusedKey string
	retryAfter := 0
	for i, res := range responses {
		policies, state := rateLimitHeaders(t, res)
		if policies["writes"]["q"] != quota || policies["writes"]["w"] != 15 || policies["default"]["q"] != 1000 || policies["default"]["w"] != 60 {
			t.Errorf("RateLimit-Policy %q", res.Header.Get("RateLimit-Policy"))
		}
		switch res.Status {
		case http.StatusCreated:
			remaining = append(remaining, state["writes"]["r"])
		case http.StatusTooManyRequests:
			refusedKey = keys[i]
			p := res.Problem(t)
			if p.Type != "/problems/rate-limited" || !slices.Equal(policyNames(p), []string{"writes"}) {
				t.Errorf("429 problem %s", res.Body)
			}
			seconds, err := strconv.Atoi(res.Header.Get("Retry-After"))
			if err != nil || seconds < 1 {
				t.Errorf("Retry-After %q, want whole seconds, at least 1", res.Header.Get("Retry-After"))
			}
			retryAfter = max(retryAfter, seconds)
			if state["writes"]["r"] != 0 || state["writes"]["t"] < 1 {
				t.Errorf("a 429's RateLimit %q, want writes r=0 and t>0", res.Header.Get("RateLimit"))
			}
		default:
			t.Errorf("status %d: %s", res.Status, res.Body)
		}
	}
	// Each request that passed saw the bucket one lower: r counted down from quota-1 to 0.
	slices.Sort(remaining)
	if !slices.Equal(remaining, []int64{0, 1, 2, 3, 4}) {
		t.Fatalf("%d of %d requests passed, with r %v; want exactly %d, with r 0..4", len(remaining), len(keys), remaining, quota)
	}
	if n := b.count(t, `SELECT count(*) FROM payments`); n != quota {
		t.Errorf("%d payments, want %d", n, quota)
	}
	refusals := fmt.Sprintf(`ratelimit_refusals_total{policy="writes"} %d`, len(keys)-quota)
	if m := string(b.client.Get("/metrics", apitest.NoAuth()).Body); !strings.Contains(m, refusals) {
		t.Errorf("GET /metrics lacks %q", refusals)
	}

	// The refused request did nothing, so the same key runs it, not replays a 429.
	time.Sleep(time.Duration(retryAfter) * time.Second)
	res := b.client.Post("/payments", visa(100), apitest.Header("Idempotency-Key", refusedKey))
	if res.Status != http.StatusCreated || res.Header.Get("Idempotent-Replayed") != "" {
		t.Errorf("after Retry-After, the refused request answered %d (replayed %q): %s",
			res.Status, res.Header.Get("Idempotent-Replayed"), res.Body)
	}
}

// concurrently sends n requests at once, each from its own goroutine, and returns the
// responses in order. A limiter's buckets are guarded by locks, so a burst is exact however
// the requests interleave.
func concurrently(n int, send func(i int) *apitest.Response) []*apitest.Response {
	responses := make([]*apitest.Response, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { responses[i] = send(i) })
	}
	wg.Wait()
	return responses
}

func policyNames(p apitest.Problem) []string {
	var names []string
	list, _ := p.Raw["violated_policies"].([]any)
	for _, v := range list {
		s, _ := v.(string)
		names = append(names, s)
	}
	return names
}

// TestRateLimitWritesCoverEveryWrite: a refund and a report spend the writes quota as a
// payment does: the operations that move money or start work.
func TestRateLimitWritesCoverEveryWrite(t *testing.T) {
	t.Parallel()
	b := setup(t, withLimits(limits(ratelimit.NewMemory(), "1000/1m", "2/1h"))) // no refill during the test
	pay, _ := createPayment(t, b.client, 100)
	createPayment(t, b.client, 100)
	for _, write := range []struct {
		path string
		body map[string]any
	}{{"/refunds", refundOf(pay.ID, 10)}, {"/reports", reportBody("payments", "csv")}} {
		res := b.client.Post(write.path, write.body, apitest.Header("Idempotency-Key", newKey()))
		if res.Status != http.StatusTooManyRequests || !slices.Equal(policyNames(res.Problem(t)), []string{"writes"}) {
			t.Errorf("POST %s with the writes quota spent: %d %s, want 429 naming writes", write.path, res.Status, res.Body)
		}
	}
}

func TestRateLimitBucketsAreSeparate(t *testing.T) {
	t.Parallel()
	b := setup(t, withLimits(limits(ratelimit.NewMemory(), "100/1h", "2/1h"))) // no refill during the test
	for range 2 {
		createPayment(t, b.client, 100)
	}
	res := b.client.Post("/payments", visa(100), apitest.Header("Idempotency-Key", newKey()))
	if res.Status != http.StatusTooManyRequests {
		t.Fatalf("third write: %d, want 429", res.Status)
	}

	t.Run("another key has its own bucket", func(t *testing.T) {
		res := b.other.Post("/payments", visa(100), apitest.Header("Idempotency-Key", newKey()))
		if _, state := rateLimitHeaders(t, res); res.Status != http.StatusCreated || state["writes"]["r"] != 1 {
			t.Errorf("the other account's first write: %d, RateLimit %q", res.Status, res.Header.Get("RateLimit"))
		}
	})
	t.Run("reads pass under default while writes is spent", func(t *testing.T) {
		res := b.client.Get("/payments")
		policies, state := rateLimitHeaders(t, res)
		if res.Status != http.StatusOK {
			t.Fatalf("read: %d %s", res.Status, res.Body)
		}
		if _, ok := policies["writes"]; ok || len(state) != 1 {
			t.Errorf("a read lists the writes policy: %q / %q", res.Header.Get("RateLimit-Policy"), res.Header.Get("RateLimit"))
		}
		// Two payments, the refused write and this read: the default bucket spent four.
		if state["default"]["r"] != 96 {
			t.Errorf("default r=%d, want 96", state["default"]["r"])
		}
	})
	t.Run("every response of a limited route has the headers", func(t *testing.T) {
		for _, res := range []*apitest.Response{
			b.client.Get("/payments/pay_doesnotexist"),                                               // 404
			b.client.Get("/payments?limit=0"),                                                        // 400
			b.client.Post("/refunds", map[string]any{}, apitest.Header("Idempotency-Key", newKey())), // 429 (writes)
		} {
			rateLimitHeaders(t, res)
		}
		if res := b.client.Get("/healthz"); res.Header.Get("RateLimit") != "" || res.Header.Get("RateLimit-Policy") != "" {
			t.Errorf("a public route carries rate-limit headers: %v", res.Header)
		}
	})
}

// TestRateLimitedDetailOnTheWire: the 429 a refused request gets says in words which quota
// is used up, and the wait it names is its Retry-After.
func TestRateLimitedDetailOnTheWire(t *testing.T) {
	t.Parallel()
	b := setup(t, withLimits(limits(ratelimit.NewMemory(), "100/1h", "1/1m"))) // no refill during the test
	createPayment(t, b.client, 100)
	res := b.client.Post("/payments", visa(100), apitest.Header("Idempotency-Key", newKey()))
	want := fmt.Sprintf("The writes quota of 1 request per minute is used up; retry after %s seconds.", res.Header.Get("Retry-After"))
	if p := res.Problem(t); res.Status != http.StatusTooManyRequests || p.Detail != want {
		t.Errorf("%d %s, want the detail %q", res.Status, res.Body, want)
	}
}

// TestRateLimitSharedAcrossProcesses runs two servers on one Redis: together they allow the
// quota, not twice it.
func TestRateLimitSharedAcrossProcesses(t *testing.T) {
	t.Parallel()
	redis := redistest.Start(t)
	fallbackLogs := &syncBuffer{}
	shared := func() ratelimit.Limiter {
		r, err := ratelimit.NewRedis(redis.URL())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		return ratelimit.NewFallback(r, ratelimit.NewMemory(), slog.New(slog.NewTextHandler(fallbackLogs, nil)))
	}
	// A one-minute window refills one write every 6 s: the test ends before a refill.
	const quota = 10
	first := setup(t, withLimits(limits(shared(), "1000/1m", "10/1m")))
	second := setup(t, withDatabase(first.dbURL), withLimits(limits(shared(), "1000/1m", "10/1m")))

	responses := concurrently(3*quota, func(i int) *apitest.Response {
		client := []*apitest.Client{first.client, second.client}[i%2]
		return client.Post("/payments", visa(100), apitest.Header("Idempotency-Key", newKey()))
	})
	passed := 0
	for _, res := range responses {
		if res.Status == http.StatusCreated {
			passed++
		} else if res.Status != http.StatusTooManyRequests {
			t.Errorf("status %d: %s", res.Status, res.Body)
		}
	}
	if passed < quota || passed > quota+1 {
		t.Errorf("two servers together allowed %d writes, want the quota of %d (or one more, refilled)", passed, quota)
	}
	if logs := fallbackLogs.String(); logs != "" {
		t.Errorf("the limits did not all come from Redis:\n%s", logs)
	}
}

// TestRateLimitSurvivesRedisOutage stops the server's Redis mid-run: requests keep passing,
// limited in memory, and the outage is logged once.
func TestRateLimitSurvivesRedisOutage(t *testing.T) {
	t.Parallel()
	redis := redistest.Start(t)
	r, err := ratelimit.NewRedis(redis.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	logs := &syncBuffer{}
	limiter := ratelimit.NewFallback(r, ratelimit.NewMemory(), slog.New(slog.NewJSONHandler(logs, nil)))
	b := setup(t, withLimits(limits(limiter, "1000/1h", "1000/1h"))) // no refill during the test

	get := func(want int64) {
		t.Helper()
		res := b.client.Get("/account")
		if res.Status != http.StatusOK {
			t.Fatalf("GET /account: %d %s", res.Status, res.Body)
		}
		if _, state := rateLimitHeaders(t, res); state["default"]["r"] != want {
			t.Fatalf("GET /account: RateLimit %q, want r=%d", res.Header.Get("RateLimit"), want)
		}
	}
	get(999)
	get(998)
	redis.Stop()
	// The memory backup starts from a full bucket: this process's own count from here on.
	get(999)
	get(998)
	createPayment(t, b.client, 100)
	if n := strings.Count(logs.String(), "redis failed"); n != 1 {
		t.Errorf("the outage was logged %d times, want once:\n%s", n, logs.String())
	}
}

// TestRateLimitUnauthenticatedFlood: once an address has used up its failed authentications,
// it is refused before any key lookup. The database is closed to prove it: a lookup would
// answer 500, not 429.
func TestRateLimitUnauthenticatedFlood(t *testing.T) {
	t.Parallel()
	l := limits(ratelimit.NewMemory(), "1000/1s", "1000/1s")
	l.Unauthenticated.Rate = mustRate("3/1m")
	b := setup(t, withLimits(l))
	if res := b.client.Get("/account"); res.Status != http.StatusOK { // the good key is now cached
		t.Fatalf("GET /account with the good key: %d", res.Status)
	}

	for i := range 3 {
		// Two wrong keys and a request with none: each is a failed authentication.
		auth := apitest.Header("Authorization", "Bearer sk_test_guess_"+strconv.Itoa(i))
		if i == 2 {
			auth = apitest.NoAuth()
		}
		res := b.client.Get("/account", auth)
		policies, state := rateLimitHeaders(t, res)
		if res.Status != http.StatusUnauthorized || policies["unauthenticated"]["q"] != 3 || state["unauthenticated"]["r"] != int64(2-i) {
			t.Fatalf("failure %d: %d, RateLimit %q", i+1, res.Status, res.Header.Get("RateLimit"))
		}
	}
	b.pool.Close()
	// The address is refused whatever it sends, its cached good key too: a key that answered
	// otherwise than a wrong one would tell a guesser it is good.
	if res := b.client.Get("/account"); res.Status != http.StatusTooManyRequests {
		t.Errorf("the cached good key from an address out of failures: %d, want 429", res.Status)
	}
	if res := b.client.Get("/account", apitest.NoAuth()); res.Status != http.StatusTooManyRequests {
		t.Errorf("no key from an address out of failures: %d, want 429", res.Status)
	}
	for i := range 20 {
		res := b.client.Get("/account", apitest.Header("Authorization", "Bearer sk_test_flood_"+strconv.Itoa(i)))
		if res.Status != http.StatusTooManyRequests {
			t.Fatalf("flood request %d: %d %s, want 429 without a key lookup", i+1, res.Status, res.Body)
		}
		if p := res.Problem(t); !slices.Equal(policyNames(p), []string{"unauthenticated"}) || res.Header.Get("Retry-After") == "" {
			t.Fatalf("flood request %d: %s (Retry-After %q)", i+1, res.Body, res.Header.Get("Retry-After"))
		}
	}
}

// serveFailuresLimited serves a client three failed authentications a minute per address,
// believing the X-Forwarded-For of the trusted proxies.
func serveFailuresLimited(t *testing.T, trusted []netip.Prefix) *apitest.Client {
	t.Helper()
	l := limits(ratelimit.NewMemory(), "1000/1s", "1000/1s")
	l.Unauthenticated.Rate = mustRate("3/1m")
	return setup(t, withLimits(l), withConfig(func(c *app.Config) { c.TrustedProxies = trusted })).client
}

// TestRateLimitUnauthenticatedBehindProxy: behind a trusted proxy, which appends the address
// it saw connect to X-Forwarded-For, each client has its own failed-authentication budget,
// so one client's flood of wrong keys does not lock the others out, and a client cannot
// leave its own by naming another address in front of the proxy's entry. Without a trusted
// proxy the header is ignored: every request is the connection's, the test's 127.0.0.1.
func TestRateLimitUnauthenticatedBehindProxy(t *testing.T) {
	t.Parallel()
	const flooder, other = "203.0.113.7", "198.51.100.9"
	from := func(xff string) apitest.Option { return apitest.Header("X-Forwarded-For", xff) }
	for _, tc := range []struct {
		name    string
		trusted []netip.Prefix
		// what the other client gets once the flooder is refused: with a wrong key, and with its own
		wrongKey, ownKey int
	}{
		{"proxy trusted", []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}, http.StatusUnauthorized, http.StatusOK},
		{"no proxy", nil, http.StatusTooManyRequests, http.StatusTooManyRequests},
		// Only the proxies named are trusted: not loopback, which echo would trust by default.
		{"another proxy trusted", []netip.Prefix{netip.MustParsePrefix("10.9.9.9/32")}, http.StatusTooManyRequests, http.StatusTooManyRequests},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := serveFailuresLimited(t, tc.trusted)
			wrong := apitest.Header("Authorization", "Bearer sk_test_guess")

			for i := range 3 {
				if res := c.Get("/account", wrong, from(flooder)); res.Status != http.StatusUnauthorized {
					t.Fatalf("failure %d: %d, want 401", i+1, res.Status)
				}
			}
			if res := c.Get("/account", wrong, from(flooder)); res.Status != http.StatusTooManyRequests {
				t.Fatalf("the flooder's fourth failure: %d, want 429", res.Status)
			}
			// The flooder names the other client; the proxy appends the flooder's own address.
			if res := c.Get("/account", wrong, from(other+", "+flooder)); res.Status != http.StatusTooManyRequests {
				t.Errorf("the flooder naming another address: %d, want 429", res.Status)
			}
			if res := c.Get("/account", wrong, from(other)); res.Status != tc.wrongKey {
				t.Errorf("another client's wrong key: %d, want %d", res.Status, tc.wrongKey)
			}
			if res := c.Get("/account", from(other)); res.Status != tc.ownKey {
				t.Errorf("another client's own key: %d, want %d", res.Status, tc.ownKey)
			}
		})
	}
}

// TestRateLimitUnauthenticatedIPv6Block: behind a trusted proxy, the IPv6 addresses of one
// /64 are one client, so a host cannot have a fresh failed-authentication budget from each of
// its addresses; the next /64 is another client.
func TestRateLimitUnauthenticatedIPv6Block(t *testing.T) {
	t.Parallel()
	c := serveFailuresLimited(t, []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")})
	wrong := apitest.Header("Authorization", "Bearer sk_test_guess")
	from := func(ip string) apitest.Option { return apitest.Header("X-Forwarded-For", ip) }

	for i := range 3 {
		ip := fmt.Sprintf("2001:db8:1:2::%x", i+1) // a new address of the /64 each time
		if res := c.Get("/account", wrong, from(ip)); res.Status != http.StatusUnauthorized {
			t.Fatalf("failure %d from %s: %d, want 401", i+1, ip, res.Status)
		}
	}
	if res := c.Get("/account", wrong, from("2001:db8:1:2:ffff::9")); res.Status != http.StatusTooManyRequests {
		t.Errorf("another address of the same /64: %d, want 429", res.Status)
	}
	if res := c.Get("/account", wrong, from("2001:db8:1:3::1")); res.Status != http.StatusUnauthorized {
		t.Errorf("an address of the next /64: %d, want 401", res.Status)
	}
}

// TestSpecDocumentsRateLimits: every response of every operation that needs a key lists the
// rate-limit headers, and every such operation documents its 429, so contract tests expect
// what the server sends.
func TestSpecDocumentsRateLimits(t *testing.T) {
	spec, err := api.GetSpec()
	if err != nil {
		t.Fatal(err)
	}
	for path, item := range spec.Paths.Map() {
		for method, op := range item.Operations() {
			if op.Security != nil && len(*op.Security) == 0 {
				continue
			}
			if op.Responses.Status(http.StatusTooManyRequests) == nil {
				t.Errorf("%s %s does not document 429", method, path)
			}
			for status, res := range op.Responses.Map() {
				for _, h := range []string{"RateLimit", "RateLimit-Policy"} {
					if res.Value.Headers[h] == nil {
						t.Errorf("%s %s %s does not document %s", method, path, status, h)
					}
				}
			}
		}
	}
}

// TestRateLimitUnauthenticatedGuessesAtOnce: wrong keys sent at once are looked up no more
// often than the address has failed authentications left, however they interleave: each
// lookup spends one before it starts, where a peek alone would let them all through on the
// last one left. The test holds every lookup on a lock until each request is either waiting
// for it or answered, then lets go.
func TestRateLimitUnauthenticatedGuessesAtOnce(t *testing.T) {
	t.Parallel()
	const quota, n = 3, 10
	l := limits(ratelimit.NewMemory(), "1000/1s", "1000/1s")
	l.Unauthenticated.Rate = mustRate(fmt.Sprintf("%d/1m", quota))
	b := setup(t, withLimits(l))

	release := b.holdLocks(t, `LOCK TABLE api_keys IN ACCESS EXCLUSIVE MODE`)
	answered, wait := sendAtOnce(n, func(i int) *apitest.Response {
		return b.client.Get("/account", apitest.Header("Authorization", "Bearer sk_test_guess_"+strconv.Itoa(i)))
	})
	b.waitUntil(t, "every request waits for its lookup or is answered", func(blocked int) bool {
		return blocked+int(answered.Load()) == n
	})
	release()
	responses := wait()

	statuses := map[int]int{}
	for _, res := range responses {
		statuses[res.Status]++
	}
	if statuses[http.StatusUnauthorized] != quota || statuses[http.StatusTooManyRequests] != n-quota {
		t.Errorf("%d wrong keys at once with %d failures allowed: %v by status; want %d looked up (401), the rest refused (429)",
			n, quota, statuses, quota)
	}
}

// lookupsHeldTogether starts a server that allows each address one failed authentication,
// sends n requests at once with send, holds the key lookup on a lock until every request has
// reached it, then lets go, and returns the server and the answers in order.
func lookupsHeldTogether(t *testing.T, n int, send func(b *testBundle) *apitest.Response) (*testBundle, []*apitest.Response) {
	t.Helper()
	l := limits(ratelimit.NewMemory(), "1000/1s", "1000/1s")
	l.Unauthenticated.Rate = mustRate("1/1m")
	b, spans := setupTraced(t, withLimits(l))
	release := b.holdLocks(t, `LOCK TABLE api_keys IN ACCESS EXCLUSIVE MODE`)
	_, wait := sendAtOnce(n, func(int) *apitest.Response { return send(b) })
	// Each request starts its auth span before it looks for its key; one lookup waits for
	// the lock, and the others wait for it or were refused.
	b.waitUntil(t, "every request reaches its lookup", func(blocked int) bool {
		return authsStarted(spans) == n && blocked >= 1
	})
	release()
	return b, wait()
}

// TestRateLimitUnauthenticatedGoodKeyAtOnce: requests sent at once from one address with a
// good key that is not cached share one lookup, which spends one failed authentication and
// gives it back, so none of them is refused however few failures the address has left.
func TestRateLimitUnauthenticatedGoodKeyAtOnce(t *testing.T) {
	t.Parallel()
	const n = 10
	b, responses := lookupsHeldTogether(t, n, func(b *testBundle) *apitest.Response {
		return b.other.Get("/account") // otherKey's first use: it is not cached
	})
	for i, res := range responses {
		if res.Status != http.StatusOK {
			t.Errorf("request %d of %d with a good key: %d %s", i+1, n, res.Status, res.Body)
		}
	}
	// What the lookup spent was given back: the address still has its one failure.
	if res := b.client.Get("/account", apitest.Header("Authorization", "Bearer sk_test_guess")); res.Status != http.StatusUnauthorized {
		t.Errorf("a wrong key after the good ones: %d, want 401", res.Status)
	}
}

// TestRateLimitUnauthenticatedWrongKeyAtOnce: requests sent at once from one address with
// the same wrong key share one lookup, but each is a failed authentication of its own, so
// once the address's failures are used up the rest are refused with 429, as they would be
// one after another.
func TestRateLimitUnauthenticatedWrongKeyAtOnce(t *testing.T) {
	t.Parallel()
	const n = 10
	_, responses := lookupsHeldTogether(t, n, func(b *testBundle) *apitest.Response {
		return b.client.Get("/account", apitest.Header("Authorization", "Bearer sk_test_guess"))
	})
	statuses := map[int]int{}
	for _, res := range responses {
		statuses[res.Status]++
		if res.Status == http.StatusTooManyRequests && res.Header.Get("Retry-After") == "" {
			t.Errorf("429 without Retry-After: %s", res.Body)
		}
	}
	if statuses[http.StatusUnauthorized] != 1 || statuses[http.StatusTooManyRequests] != n-1 {
		t.Errorf("%d requests with one wrong key at once, one failure allowed: %v by status; want one 401, the rest 429", n, statuses)
	}
}

// TestRateLimitUnauthenticatedSharedLookupOfALeaver: a request that shares the key lookup of
// a request whose client goes away looks the key up itself, instead of failing with the
// other request's cancellation.
func TestRateLimitUnauthenticatedSharedLookupOfALeaver(t *testing.T) {
	t.Parallel()
	b, spans := setupTraced(t)

	release := b.holdLocks(t, `LOCK TABLE api_keys IN ACCESS EXCLUSIVE MODE`)
	// The leaver looks up otherKey, not yet cached, and waits for the lock.
	ctx, leave := context.WithTimeout(context.Background(), time.Minute) // a failed test still ends
	defer leave()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.client.BaseURL+"/account", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+otherKey)
	left := make(chan struct{})
	go func() {
		defer close(left)
		if res, err := http.DefaultClient.Do(req); err == nil {
			res.Body.Close()
			t.Errorf("the leaver was answered %d", res.StatusCode)
		}
	}()
	b.waitUntilBlocked(t, 1)
	first := b.lockWaitStarted(t)

	var stayer *apitest.Response
	stayed := make(chan struct{})
	go func() {
		defer close(stayed)
		stayer = b.other.Get("/account")
	}()
	b.waitUntil(t, "the second request reaches the lookup", func(int) bool { return authsStarted(spans) == 2 })
	leave()
	<-left
	// The leaver's statement is cancelled with its request; the second request's own lookup
	// then waits for the lock.
	b.waitUntil(t, "the second request looks the key up itself", func(blocked int) bool {
		return blocked == 1 && b.lockWaitStarted(t).After(first)
	})
	release()
	<-stayed
	if stayer.Status != http.StatusOK {
		t.Errorf("the request that stayed: %d %s", stayer.Status, stayer.Body)
	}
}

// sendAtOnce starts n requests at once, each from its own goroutine. answered counts those
// answered so far; wait waits for them all and returns their responses in order.
func sendAtOnce(n int, send func(i int) *apitest.Response) (answered *atomic.Int64, wait func() []*apitest.Response) {
	answered = &atomic.Int64{}
	responses := make([]*apitest.Response, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			responses[i] = send(i)
			answered.Add(1)
		})
	}
	return answered, func() []*apitest.Response { wg.Wait(); return responses }
}

// authsStarted counts the requests that have begun resolving their key.
func authsStarted(spans *tracetest.SpanRecorder) int {
	n := 0
	for _, s := range spans.Started() {
		if s.Name() == "auth" {
			n++
		}
	}
	return n
}

// lockWaitStarted is when the latest statement waiting for a lock began.
func (b *testBundle) lockWaitStarted(t *testing.T) time.Time {
	t.Helper()
	var started time.Time
	err := b.pool.QueryRow(context.Background(), `SELECT coalesce(max(query_start), 'epoch') FROM pg_stat_activity
		WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&started)
	if err != nil {
		t.Errorf("when the lock wait started: %v", err)
	}
	return started
}

// TestALookupWithoutAnAnswerStillSaysTheLimits: a key that is not cached is looked up, and
// a lookup the database does not answer within REQUEST_TIMEOUT answers 503. That 503 of a
// limited operation carries RateLimit-Policy and RateLimit, as the spec says every answer
// of one does: the Unauthenticated policy's, the one quota the request met.
func TestALookupWithoutAnAnswerStillSaysTheLimits(t *testing.T) {
	t.Parallel()
	b := setup(t, withConfig(func(c *app.Config) { c.RequestTimeout = time.Second }))
	c, _ := throwaway(t, b.client)
	release := b.holdLocks(t, `LOCK TABLE api_keys IN ACCESS EXCLUSIVE MODE`)
	res := c.Get("/payments")
	release()
	if res.Status != http.StatusServiceUnavailable {
		t.Fatalf("GET /payments while its key's lookup waits: %d %s, want 503", res.Status, res.Body)
	}
	policies, state := rateLimitHeaders(t, res)
	if policies["unauthenticated"] == nil || state["unauthenticated"]["r"] != policies["unauthenticated"]["q"] {
		// A lookup that got no answer was no failed authentication: it spent nothing.
		t.Errorf("RateLimit-Policy %q, RateLimit %q: want the unauthenticated policy's, all of it left",
			res.Header.Values("RateLimit-Policy"), res.Header.Values("RateLimit"))
	}
}
