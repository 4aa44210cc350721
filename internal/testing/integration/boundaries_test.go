package integration

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// boundary is one request at an edge of the contract, and whether api/openapi.yaml accepts it.
type boundary struct {
	name         string
	method, path string
	key          string // the Idempotency-Key, when there is one
	body         string
	accepted     bool
}

// TestServerAndPrismAgreeOnTheBoundaries sends requests at the edges of the contract to the
// server directly and through Prism's validation proxy, which judges each by the spec alone:
// Idempotency-Key lengths around 255, bare and quoted; integers written 2500, 2500.0, 25e2
// and 2.5E3 and a number that is not one, in a body and in the query (limit); HEAD, OPTIONS
// and methods a path does not list.
// The server must accept exactly what the spec accepts (a 2xx, or a 4xx), so a tool that
// generates requests from the spec never meets a refusal it cannot predict. Each case also
// states the verdict, so the boundary itself is pinned, not only the agreement.
func TestServerAndPrismAgreeOnTheBoundaries(t *testing.T) {
	t.Parallel()
	srv := startServer(t, map[string]string{"RATE_LIMIT_DISABLED": "true"})
	prism := startPrism(t, srv.Base)
	payment := createPaymentAt(t, srv.Base)

	for _, b := range boundaries(payment) {
		t.Run(b.name, func(t *testing.T) {
			direct, _ := b.send(t, srv.Base)
			status, body := b.send(t, prism.base)
			serverAccepts := direct < 300
			specAccepts := !prismRefused(b.method, status, body)
			if serverAccepts != specAccepts || serverAccepts != b.accepted {
				t.Errorf("%s %s: the server answered %d, Prism %d %.200s; want both to %s it",
					b.method, b.path, direct, status, body, verdict(b.accepted))
			}
			// A request Prism forwards comes back with the server's status, but for HEAD,
			// whose empty answer Prism's proxy tries to parse as JSON (its own 500).
			if specAccepts && b.method != http.MethodHead && status != direct {
				t.Errorf("through Prism %d %.200s, directly %d", status, body, direct)
			}
		})
	}
	for _, line := range strings.Split(prism.logs.String(), "\n") {
		if strings.Contains(line, "Violation") && strings.Contains(line, "response") {
			t.Errorf("prism: %s", line)
		}
	}
}

// boundaries is the corpus, with payment an id that exists.
func boundaries(payment string) []boundary {
	create := func(amount string) string {
		return `{"amount":` + amount + `,"currency":"usd","payment_method":"pm_card_visa"}`
	}
	key := func(name, key string, accepted bool) boundary {
		return boundary{name: "Idempotency-Key " + name, method: http.MethodPost, path: "/payments", key: key, body: create("100"), accepted: accepted}
	}
	amount := func(amount string, accepted bool) boundary {
		return boundary{name: "amount " + amount, method: http.MethodPost, path: "/payments", key: "amount-" + amount, body: create(amount), accepted: accepted}
	}
	method := func(method, path string, accepted bool) boundary {
		return boundary{name: method + " " + path, method: method, path: path, accepted: accepted}
	}
	return []boundary{
		key("of 1 character", "a", true),
		key("of 255 characters", strings.Repeat("b", 255), true),
		key("of 256 characters", strings.Repeat("c", 256), false),
		key("quoted, 257 characters", `"`+strings.Repeat("d", 255)+`"`, true),
		key("quoted, 258 characters", `"`+strings.Repeat("e", 256)+`"`, false),
		key("quoted, with escapes", `"f\"\\f"`, true),
		key("quoted, empty", `""`, false),
		key("quoted, unterminated", `"g`, false),
		key("bare, with a quote inside", `h"h`, true),
		key("with a tab", "i\ti", false),
		amount("2500", true),
		amount("2500.0", true),
		amount("25e2", true),
		amount("2.5E3", true),
		amount("2500.5", false),
		amount("25e-1", false),
		method(http.MethodHead, "/payments", true),
		method(http.MethodHead, "/payments?limit=0", false),
		method(http.MethodHead, "/payments/"+payment, true),
		method(http.MethodHead, "/payments/not-an-id", false),
		method(http.MethodHead, "/account", true),
		method(http.MethodHead, "/test/accounts", false), // no GET there
		method(http.MethodOptions, "/payments", true),
		method(http.MethodOptions, "/payments/not-an-id", true), // a path's methods do not depend on the id
		method(http.MethodOptions, "/problems/Not_A_Problem", true),
		method(http.MethodOptions, "/no/such/path", false),
		method(http.MethodGet, "/payments?limit=10", true),
		method(http.MethodGet, "/payments?limit=10.0", true),
		method(http.MethodGet, "/payments?limit=1e1", true),
		method(http.MethodGet, "/payments?limit=010", true),
		method(http.MethodGet, "/payments?limit=%2B10", true),
		method(http.MethodGet, "/payments?limit=10.5", false),
		method(http.MethodGet, "/payments?limit=0", false),
		method(http.MethodGet, "/payments?limit=101", false),
		// Not here: an empty limit=, which Prism forwards and the server refuses with 400,
		// as the spec says (a parameter without allowEmptyValue is never empty).
		method(http.MethodGet, "/payments?limit=ten", false),
		method(http.MethodPut, "/payments", false),
		method(http.MethodPut, "/payments/"+payment, false),
		method(http.MethodDelete, "/payments", false),
	}
}

// send makes the request at base, with the API key, and returns the status and body.
func (b boundary) send(t *testing.T, base string) (int, []byte) {
	t.Helper()
	var body io.Reader
	if b.body != "" {
		body = strings.NewReader(b.body)
	}
	req, err := http.NewRequestWithContext(t.Context(), b.method, base+b.path, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+testKey)
	if b.body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if b.key != "" {
		req.Header["Idempotency-Key"] = []string{b.key}
	}
	res, err := httpClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s%s: %v", b.method, base, b.path, err)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("%s %s%s: read the body: %v", b.method, base, b.path, err)
	}
	return res.StatusCode, data
}

// prismRefused reports whether Prism answered a request itself because it breaks the spec,
// instead of forwarding it: with its own problem, whose type is one of Prism's errors (422
// for an invalid request, 404 and 405 for a path or method the spec lacks). An answer to HEAD
// has no body, so there the 4xx says it: a HEAD Prism forwards comes back with the server's
// status, or with Prism's 500 when the server's answer is JSON, since its proxy parses the
// empty body as JSON (stoplightio/prism's forwarder only spares a 204).
func prismRefused(method string, status int, body []byte) bool {
	if method == http.MethodHead {
		return status >= 400 && status < 500
	}
	var problem struct{ Type string }
	_ = json.Unmarshal(body, &problem)
	return strings.HasPrefix(problem.Type, "https://stoplight.io/prism/errors#")
}

func verdict(accepted bool) string {
	if accepted {
		return "accept"
	}
	return "refuse"
}

// createPaymentAt creates a payment on the server at base and returns its id.
func createPaymentAt(t *testing.T, base string) string {
	t.Helper()
	b := boundary{method: http.MethodPost, path: "/payments", key: "the-payment", body: `{"amount":100,"currency":"usd","payment_method":"pm_card_visa"}`}
	status, body := b.send(t, base)
	var p struct{ ID string }
	if err := json.Unmarshal(body, &p); err != nil || status != http.StatusCreated {
		t.Fatalf("create a payment: %d %s", status, body)
	}
	return p.ID
}
