package handlers_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/payments-api/payments-api/internal/api"
	"github.com/payments-api/payments-api/internal/contract"
	"github.com/payments-api/payments-api/internal/processor"
	"github.com/payments-api/payments-api/internal/testing/apitest"
)

// The fuzz targets send mutated requests through the real server on a real database. Their
// seed corpora (testdata/fuzz) hold every hostile request a robustness review found and run in every
// `go test`, but for the largest, which a test of their own sends through the
// same checks; scripts/test also fuzzes each target for a few seconds. Any request fails the
// target when the server answers 5xx (but the documented processor outage), takes longer than
// fuzzSlow, answers more than fuzzLargest bytes, or answers something the spec does not document.
//
// fuzzSlow catches requests whose cost runs away with their input (the quadratic and deep
// bodies took seconds to minutes); it is not a latency target. The fuzzer's workers share the
// cores with the server and the database, so an ordinary request can take a few hundred
// milliseconds under load: the bound leaves room for that.
const (
	fuzzLargest = 256 << 10
	fuzzSlow    = 3 * time.Second
)

// fuzzServer is one server per fuzzing process, with one payment to patch and refund.
type fuzzServer struct {
	url      string
	http     *http.Client
	contract *contract.Contract
	payment  string // its id
	etag     string
	keys     atomic.Int64
}

func setupFuzz(f testing.TB) *fuzzServer {
	f.Helper()
	b := setup(f, withLogger(slog.New(slog.DiscardHandler)))
	res := b.client.Post("/payments", visa(5000), apitest.Header("Idempotency-Key", newKey()))
	if res.Status != http.StatusCreated {
		f.Fatalf("create payment: %d %s", res.Status, res.Body)
	}
	var p payment
	res.Decode(f, &p)
	c, err := contract.Load()
	if err != nil {
		f.Fatal(err)
	}
	return &fuzzServer{url: b.client.BaseURL, http: &http.Client{Timeout: 10 * time.Second}, contract: c, payment: p.ID, etag: res.Header.Get("ETag")}
}

// isReference reports whether res is the API reference page (GET /docs or GET /): one fixed
// document of a few MiB whatever the request, so its size says nothing about a request's cost.
func isReference(res *http.Response) bool {
	return res.StatusCode == http.StatusOK && res.ContentLength == int64(len(api.ReferenceHTML)) &&
		(res.Request.URL.Path == "/" || res.Request.URL.Path == "/docs")
}

// send sends one request and checks the answer. headers are name, value pairs; an empty value
// leaves the header out. A request Go's client refuses to send (a header with a newline) is
// skipped: it cannot reach any server.
func (s *fuzzServer) send(t *testing.T, method, target string, body []byte, headers ...string) {
	req, err := http.NewRequestWithContext(context.Background(), method, s.url+target, bytes.NewReader(body))
	if err != nil {
		return
	}
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i+1] != "" {
			req.Header.Set(headers[i], headers[i+1])
		}
	}
	// net/http answers a request it cannot take itself (a space or control character in the
	// request line, or a line and headers over its limit: 400 or 431, without a Request-Id) and
	// closes the connection with the rest of the request unread. That close can reach the
	// client as a reset, before the answer or during it: either way the server refused it.
	refused := func(res *http.Response) bool {
		malformed := len(target)+len(strings.Join(headers, "")) > http.DefaultMaxHeaderBytes ||
			strings.ContainsFunc(target, func(r rune) bool { return r <= ' ' || r == 0x7f })
		return malformed && (res == nil || res.Header.Get("Request-Id") == "")
	}
	start := time.Now()
	res, err := s.http.Do(req)
	if err != nil {
		if strings.Contains(err.Error(), "invalid") || refused(nil) { // refused by the client, or by net/http
			return
		}
		t.Fatalf("%s %.100s: %v", method, target, err)
	}
	defer res.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(res.Body, fuzzLargest+1))
	elapsed := time.Since(start)
	if err != nil {
		if refused(res) {
			return
		}
		t.Fatalf("%s %.100s: read: %v", method, target, err)
	}
	switch {
	case res.StatusCode >= 500 && !bytes.Contains(answer, []byte("/problems/processor-unavailable")):
		t.Fatalf("%s %.100s (%d-byte body): %d %.500s", method, target, len(body), res.StatusCode, answer)
	case elapsed > fuzzSlow*raceSlowdown && !bytes.Contains(body, []byte(processor.CardSlow)): // that card takes 2 s by design
		t.Fatalf("%s %.100s (%d-byte body): answered after %v", method, target, len(body), elapsed)
	case len(answer) > fuzzLargest && !isReference(res):
		t.Fatalf("%s %.100s: an answer over %d bytes", method, target, fuzzLargest)
	}
	// Answers from our stack carry a Request-Id; net/http's own (a malformed request line)
	// do not, and are not ours to document.
	if res.Header.Get("Request-Id") != "" {
		if err := s.contract.ValidateResponse(req, res.StatusCode, res.Header, answer); err != nil {
			t.Fatalf("%s %.100s answered %d, which breaks the spec: %v\n%.500s", method, target, res.StatusCode, err, answer)
		}
	}
}

func (s *fuzzServer) newKey() string {
	return fmt.Sprintf("fuzz-%d-%d", time.Now().UnixNano(), s.keys.Add(1))
}

// bodyRequest sends body with contentType to one of the three operations that take a body,
// chosen by op: create a payment, create a refund, update the payment.
func (s *fuzzServer) bodyRequest(t *testing.T, op byte, body []byte, contentType string) {
	auth := "Bearer " + testKey
	switch op % 3 {
	case 0:
		s.send(t, http.MethodPost, "/payments", body, "Authorization", auth, "Content-Type", contentType, "Idempotency-Key", s.newKey())
	case 1:
		s.send(t, http.MethodPost, "/refunds", body, "Authorization", auth, "Content-Type", contentType, "Idempotency-Key", s.newKey())
	case 2:
		s.send(t, http.MethodPatch, "/payments/"+s.payment, body, "Authorization", auth, "Content-Type", contentType, "If-Match", s.etag)
	}
}

// queryRequest sends a GET of path and query.
func (s *fuzzServer) queryRequest(t *testing.T, path, query string) {
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	s.send(t, http.MethodGet, path+"?"+query, nil, "Authorization", "Bearer "+testKey)
}

// FuzzBodies sends mutated bodies and Content-Types to every operation that takes a body.
func FuzzBodies(f *testing.F) {
	s := setupFuzz(f)
	f.Fuzz(func(t *testing.T, op byte, body []byte, contentType string) {
		s.bodyRequest(t, op, body, contentType)
	})
}

// FuzzHeaders sends mutated Idempotency-Key, If-Match, If-None-Match, Authorization and
// Content-Type headers with valid bodies.
func FuzzHeaders(f *testing.F) {
	s := setupFuzz(f)
	f.Add("k-1", `"v1"`, `"v1"`, "Bearer "+testKey, "application/json")
	f.Fuzz(func(t *testing.T, key, ifMatch, ifNoneMatch, auth, contentType string) {
		body := []byte(`{"amount":100,"currency":"usd","payment_method":"pm_card_visa"}`)
		s.send(t, http.MethodPost, "/payments", body, "Authorization", auth, "Content-Type", contentType, "Idempotency-Key", key)
		s.send(t, http.MethodPatch, "/payments/"+s.payment, []byte(`{"description":"fuzzed"}`),
			"Authorization", auth, "Content-Type", contentType, "If-Match", ifMatch)
		s.send(t, http.MethodGet, "/payments/"+s.payment, nil, "Authorization", auth, "If-None-Match", ifNoneMatch)
		refund := []byte(`{"payment_id":"` + s.payment + `","amount":1}`)
		s.send(t, http.MethodPost, "/refunds", refund, "Authorization", auth, "Content-Type", contentType, "Idempotency-Key", key, "If-Match", ifMatch)
	})
}

// FuzzQueries sends GETs of mutated paths and query strings.
func FuzzQueries(f *testing.F) {
	s := setupFuzz(f)
	f.Add("/payments", "limit=0&status=pending&created_gte=yesterday")
	f.Fuzz(s.queryRequest)
}

// TestHugeRequestsMeetTheFuzzBounds sends the largest hostile requests through the fuzz
// targets' checks. They are regression cases, not seeds: the fuzzer would mutate them too,
// and one mutated megabyte costs as much as a thousand small inputs (minimizing an
// interesting one stalled a 1,000-input run for over a minute).
func TestHugeRequestsMeetTheFuzzBounds(t *testing.T) {
	t.Parallel()
	s := setupFuzz(t)
	for name, body := range hostileBodies() {
		t.Run(name, func(t *testing.T) {
			for op := range byte(3) {
				s.bodyRequest(t, op, []byte(body), "application/json")
			}
		})
	}
	huge := "/payments/pay_" + strings.Repeat("a", 1_000_000)
	t.Run("a 1 MB path", func(t *testing.T) {
		s.queryRequest(t, huge, "")  // once answered with a 1 MB instance
		s.queryRequest(t, huge, " ") // net/http's own 400, then a reset
	})
}
