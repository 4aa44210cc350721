package handlers_test

import (
	"bytes"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/payments-api/payments-api/internal/api"
	"github.com/payments-api/payments-api/internal/app"
	"github.com/payments-api/payments-api/internal/handlers"
	"github.com/payments-api/payments-api/internal/testing/apitest"
)

// TestHeadAnswersLikeGet sends HEAD and GET to every GET route: the same status and headers
// (apart from those that differ per request), and no body. apitest checks each HEAD against
// the GET operation's documented responses as well.
func TestHeadAnswersLikeGet(t *testing.T) {
	t.Parallel()
	b := setup(t)
	p, _ := createPayment(t, b.client, 700)
	refund := b.client.Post("/refunds", refundOf(p.ID, 100), apitest.Header("Idempotency-Key", newKey()))
	var r struct{ ID string }
	refund.Decode(t, &r)
	_, tag := getPayment(t, b.client, p.ID) // after the refund changed it

	paths := []string{
		"/payments/" + p.ID, "/refunds?payment_id=" + p.ID, "/refunds/" + r.ID, "/problems/not-found",
		"/refunds?limit=0", "/no/such/route",
	}
	paths = append(paths, specPaths(t, http.MethodGet)...)
	for _, path := range paths {
		t.Run(path, func(t *testing.T) {
			get := b.client.Get(path)
			head := b.client.Do(http.MethodHead, path, nil)
			if path == "/metrics" { // it counts the GET before the HEAD, so its length differs
				get.Header.Del("Content-Length")
				head.Header.Del("Content-Length")
			}
			assertSameAnswer(t, get, head)
		})
	}
	t.Run("without a key", func(t *testing.T) {
		get := b.client.Get("/payments", apitest.NoAuth())
		head := b.client.Do(http.MethodHead, "/payments", nil, apitest.NoAuth())
		assertSameAnswer(t, get, head)
		if head.Status != http.StatusUnauthorized {
			t.Errorf("HEAD without a key: %d, want 401", head.Status)
		}
	})
	t.Run("If-None-Match", func(t *testing.T) {
		head := b.client.Do(http.MethodHead, "/payments/"+p.ID, nil, apitest.Header("If-None-Match", tag))
		if head.Status != http.StatusNotModified || head.Header.Get("ETag") != tag {
			t.Errorf("HEAD with the current tag: %d ETag %q, want 304 %s", head.Status, head.Header.Get("ETag"), tag)
		}
	})
	t.Run("is logged as HEAD", func(t *testing.T) {
		b.client.Do(http.MethodHead, "/account", nil, apitest.Header("Request-Id", "head-log-line"))
		if !strings.Contains(b.logs.String(), `"method":"HEAD","route":"/account"`) {
			t.Errorf("no log line with method HEAD for /account:\n%s", b.logs.String())
		}
	})
}

func assertSameAnswer(t *testing.T, get, head *apitest.Response) {
	t.Helper()
	if head.Status != get.Status {
		t.Fatalf("HEAD %d, GET %d", head.Status, get.Status)
	}
	if len(head.Body) != 0 {
		t.Errorf("HEAD has a %d-byte body", len(head.Body))
	}
	perRequest := []string{"Request-Id", "Date", "Server-Timing"}
	for name := range get.Header {
		if slices.Contains(perRequest, name) {
			continue
		}
		if g, h := get.Header.Values(name), head.Header.Values(name); !slices.Equal(g, h) {
			t.Errorf("header %s: GET %q, HEAD %q", name, g, h)
		}
	}
	for name := range head.Header {
		if _, ok := get.Header[name]; !ok && !slices.Contains(perRequest, name) {
			t.Errorf("HEAD has header %s that GET has not", name)
		}
	}
}

// TestOptionsNeedsNoKey: every path answers OPTIONS with its Allow, with or without a key;
// apitest checks that Allow lists exactly the spec's methods plus HEAD and OPTIONS.
func TestOptionsNeedsNoKey(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, path := range specPaths(t, "") {
		for _, c := range []*apitest.Client{b.client, b.client.WithKey("")} {
			res := c.Do(http.MethodOptions, path, nil)
			if res.Status != http.StatusNoContent || res.Header.Get("Allow") == "" {
				t.Errorf("OPTIONS %s (key %q): %d Allow %q", path, c.APIKey, res.Status, res.Header.Get("Allow"))
			}
		}
	}
	// echo's router lists a prefix's route's methods for some of these paths; no operation
	// of the spec is on any of them.
	for _, path := range []string{"/no/such/route", "/payments/pay_X/refunds", "/payments/pay_X/a/b/c", "/jobs/abc/", "/problems/not-found/x"} {
		if res := b.client.Do(http.MethodOptions, path, nil, apitest.NoAuth()); res.Status != http.StatusNotFound {
			t.Errorf("OPTIONS %s: %d Allow %q, want 404", path, res.Status, res.Header.Get("Allow"))
		}
		preflight := b.client.Do(http.MethodOptions, path, nil, apitest.NoAuth(),
			apitest.Header("Origin", "https://app.example.com"), apitest.Header("Access-Control-Request-Method", "GET"))
		if preflight.Status != http.StatusNotFound {
			t.Errorf("a preflight to %s: %d, want 404", path, preflight.Status)
		}
	}
	// A 405 lists the same methods as OPTIONS does.
	res := b.client.Do(http.MethodDelete, "/payments", nil)
	if allow := res.Header.Get("Allow"); res.Status != http.StatusMethodNotAllowed || allow != "OPTIONS, GET, HEAD, POST" {
		t.Errorf("DELETE /payments: %d Allow %q", res.Status, allow)
	}
}

// specPaths lists every path of the spec that has an operation for method (any, when
// method is empty), with each path parameter filled in with a value that names nothing.
func specPaths(t *testing.T, method string) []string {
	t.Helper()
	spec, err := api.GetSpec()
	if err != nil {
		t.Fatal(err)
	}
	param := regexp.MustCompile(`\{[^}]+\}`)
	var paths []string
	for path, item := range spec.Paths.Map() {
		if method == "" || item.GetOperation(method) != nil {
			paths = append(paths, param.ReplaceAllString(path, "nothing"))
		}
	}
	slices.Sort(paths)
	return paths
}

var exposedHeaders = []string{
	"Location", "ETag", "Idempotent-Replayed", "Request-Id", "Retry-After",
	"RateLimit", "RateLimit-Policy", "Server-Timing", "Preference-Applied",
}

// TestCORS plays a browser on an allowed origin, on another origin, and against the default
// of any origin.
func TestCORS(t *testing.T) {
	t.Parallel()
	const app = "https://app.example.com"
	allowApp := corsClient(t, []string{app})
	anyOrigin := corsClient(t, nil) // the test server's default, like CORS_ALLOWED_ORIGINS=*

	preflight := func(c *apitest.Client, origin, method, headers string) *apitest.Response {
		return c.Do(http.MethodOptions, "/payments", nil, apitest.NoAuth(),
			apitest.Header("Origin", origin),
			apitest.Header("Access-Control-Request-Method", method),
			apitest.Header("Access-Control-Request-Headers", headers))
	}

	t.Run("a preflight from an allowed origin needs no key", func(t *testing.T) {
		res := preflight(allowApp, app, "POST", "authorization,content-type,idempotency-key")
		h := res.Header
		if res.Status != http.StatusNoContent || h.Get("Access-Control-Allow-Origin") != app {
			t.Fatalf("%d Access-Control-Allow-Origin %q", res.Status, h.Get("Access-Control-Allow-Origin"))
		}
		if methods := h.Get("Access-Control-Allow-Methods"); !strings.Contains(methods, "POST") {
			t.Errorf("Access-Control-Allow-Methods %q lacks POST", methods)
		}
		allowed := strings.ToLower(h.Get("Access-Control-Allow-Headers"))
		for _, want := range []string{"authorization", "content-type", "idempotency-key", "if-match"} {
			if !strings.Contains(allowed, want) {
				t.Errorf("Access-Control-Allow-Headers %q lacks %s", allowed, want)
			}
		}
		if h.Get("Access-Control-Allow-Credentials") != "" {
			t.Error("credentials mode is on; keys travel in Authorization, never cookies")
		}
	})
	t.Run("a preflight from another origin is not allowed", func(t *testing.T) {
		res := preflight(allowApp, "https://evil.example.net", "POST", "authorization")
		if got := res.Header.Get("Access-Control-Allow-Origin"); got != "" {
			t.Errorf("Access-Control-Allow-Origin %q for a foreign origin", got)
		}
	})
	t.Run("responses expose the headers clients act on", func(t *testing.T) {
		for _, res := range []*apitest.Response{
			allowApp.Get("/account", apitest.Header("Origin", app)),
			allowApp.Get("/account", apitest.Header("Origin", app), apitest.NoAuth()), // a 401 a script must be able to read
		} {
			if res.Header.Get("Access-Control-Allow-Origin") != app {
				t.Errorf("%d: Access-Control-Allow-Origin %q", res.Status, res.Header.Get("Access-Control-Allow-Origin"))
			}
			exposed := strings.Split(res.Header.Get("Access-Control-Expose-Headers"), ",")
			for _, want := range exposedHeaders {
				if !slices.Contains(exposed, want) {
					t.Errorf("%d: Access-Control-Expose-Headers %q lacks %s", res.Status, exposed, want)
				}
			}
		}
	})
	t.Run("by default any origin", func(t *testing.T) {
		res := preflight(anyOrigin, "http://localhost:3000", "PATCH", "if-match")
		if res.Status != http.StatusNoContent || res.Header.Get("Access-Control-Allow-Origin") != "*" {
			t.Errorf("%d Access-Control-Allow-Origin %q", res.Status, res.Header.Get("Access-Control-Allow-Origin"))
		}
	})
}

// corsClient serves the API with CORS for origins (nil: the default) and returns a client
// with testKey.
func corsClient(t *testing.T, origins []string) *apitest.Client {
	t.Helper()
	return setup(t, withConfig(func(c *app.Config) { c.CORSOrigins = origins })).client
}

// TestNoOperationIsAnsweredBeforeAnythingElse: a request that matches no operation is 404 or
// 405 whoever sends it, before authentication, rate limits, injected faults or its body could
// answer; and a body sent to an operation that takes none is not read, so it cannot cost a
// 413 that operation does not document.
func TestNoOperationIsAnsweredBeforeAnythingElse(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, tt := range []struct {
		name, method, path string
		opts               []apitest.Option
		want               int
	}{
		{"unknown route, no key", http.MethodGet, "/no/such/route", []apitest.Option{apitest.NoAuth()}, http.StatusNotFound},
		{"unknown route, a fault asked for", http.MethodGet, "/no/such/route", []apitest.Option{apitest.Header("Prefer", "fault=error-before")}, http.StatusNotFound},
		{"wrong method on a secured path, no key", http.MethodPut, "/account", []apitest.Option{apitest.NoAuth()}, http.StatusMethodNotAllowed},
		// echo matches "/payments/:id" with the id "/x"; no spec path can hold that id
		{"an empty segment, no key", http.MethodGet, "/payments//x", []apitest.Option{apitest.NoAuth()}, http.StatusNotFound},
	} {
		if res := b.client.Do(tt.method, tt.path, nil, tt.opts...); res.Status != tt.want {
			t.Errorf("%s: %d %s, want %d", tt.name, res.Status, res.Body, tt.want)
		}
	}
	big := bytes.Repeat([]byte("x"), handlers.MaxBodyBytes+1)
	if res := b.client.Do(http.MethodGet, "/payments", big); res.Status != http.StatusOK {
		t.Errorf("a 1 MiB body on GET /payments: %d %s, want 200 (the body is not read)", res.Status, res.Body)
	}
}
