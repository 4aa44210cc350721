// Package apitest is the HTTP side of the test harness: a client for a running server that
// checks every response it sees against api/openapi.yaml (status, headers, media type and
// body schema), so no test can pass on a response the contract does not document.
package apitest

import (
	"bytes"
	"cmp"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/payments-api/payments-api/internal/contract"
)

// RequestTimeout bounds every request a Client sends, far above any answer a test awaits, so
// a request that waits on a lock forever fails its test instead of hanging the package.
const RequestTimeout = 10 * time.Second

// httpClient is shared by every Client, so they share one pool of connections. The pool is
// its own, not http.DefaultTransport's: httptest.Server.Close closes the default transport's
// idle connections, and a parallel test's request that had just picked one failed with
// "transport connection broken: http: CloseIdleConnections called".
var httpClient = &http.Client{Timeout: RequestTimeout, Transport: http.DefaultTransport.(*http.Transport).Clone()}

// Client sends requests to BaseURL with APIKey as the bearer token.
type Client struct {
	t        testing.TB
	BaseURL  string
	APIKey   string
	contract *contract.Contract
	http     *http.Client // nil: the shared httpClient
}

// NewClient is a client of the server at baseURL.
func NewClient(t testing.TB, baseURL, apiKey string) *Client {
	t.Helper()
	// The embedded spec (a generated copy of api/openapi.yaml that CI keeps fresh), compiled
	// once per test binary: the same validators the server runs on requests.
	c, err := contract.Load()
	if err != nil {
		t.Fatalf("load contract: %v", err)
	}
	return &Client{t: t, BaseURL: baseURL, APIKey: apiKey, contract: c}
}

// Production is a copy of c that checks responses against the contract a production server
// serves: without the x-sandbox-only operations, whose paths then do not exist at all (an
// OPTIONS or another method on them is a 404, not the sandbox's 204 or 405).
func (c *Client) Production() *Client {
	c.t.Helper()
	prod, err := contract.LoadProduction()
	if err != nil {
		c.t.Fatalf("load production contract: %v", err)
	}
	cp := *c
	cp.contract = prod
	return &cp
}

// WithKey is a copy of c that authenticates with another key.
func (c *Client) WithKey(apiKey string) *Client {
	cp := *c
	cp.APIKey = apiKey
	return &cp
}

// From is a copy of c whose connections come from the local address ip (any of 127.0.0.0/8
// on Linux), so that one test can be several clients to a limit kept per client address.
func (c *Client) From(ip string) *Client {
	dialer := &net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	cp := *c
	cp.http = &http.Client{Timeout: RequestTimeout, Transport: &http.Transport{DialContext: dialer.DialContext, DisableKeepAlives: true}}
	return &cp
}

// Via is a copy of c that sends its requests with h: a client that reads its answers in a
// way of its own (slowly, say). Its answers are checked against the spec as any other.
func (c *Client) Via(h *http.Client) *Client {
	cp := *c
	cp.http = h
	return &cp
}

// Option changes a request before it is sent.
type Option func(*http.Request)

// Header sets a request header.
func Header(key, value string) Option { return func(r *http.Request) { r.Header.Set(key, value) } }

// NoAuth sends the request without an Authorization header.
func NoAuth() Option { return func(r *http.Request) { r.Header.Del("Authorization") } }

// Response is a fully read response.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// Decode unmarshals the body into v, failing the test if it cannot.
func (r *Response) Decode(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("decode %d response %q: %v", r.Status, r.Body, err)
	}
}

// Problem is the subset of a problem body tests look at; Raw has every member.
type Problem struct {
	Type   string           `json:"type"`
	Status int              `json:"status"`
	Detail string           `json:"detail"`
	Errors []map[string]any `json:"errors"`
	Raw    map[string]any   `json:"-"`
}

// Problem decodes a problem body and checks its status member matches the response.
func (r *Response) Problem(t testing.TB) Problem {
	t.Helper()
	var p Problem
	r.Decode(t, &p)
	r.Decode(t, &p.Raw)
	if p.Status != r.Status {
		t.Errorf("problem status %d, response status %d", p.Status, r.Status)
	}
	return p
}

// Do sends a request and returns the response after checking it against the spec. body is
// sent as is when it is a string or []byte, and as JSON otherwise. Safe for parallel use.
func (c *Client) Do(method, path string, body any, opts ...Option) *Response {
	c.t.Helper()
	req, err := c.newRequest(method, path, body, opts)
	if err != nil {
		c.t.Errorf("build request: %v", err)
		return &Response{}
	}
	res, err := cmp.Or(c.http, httpClient).Do(req)
	if err != nil {
		c.t.Errorf("%s %s: %v", method, path, err)
		return &Response{}
	}
	resBody, err := io.ReadAll(res.Body)
	if closeErr := res.Body.Close(); err == nil {
		err = closeErr
	}
	if err != nil {
		c.t.Errorf("%s %s: read body: %v", method, path, err)
	}
	r := &Response{Status: res.StatusCode, Header: res.Header, Body: resBody}
	if err := c.contract.ValidateResponse(req, r.Status, r.Header, r.Body); err != nil {
		c.t.Errorf("%s %s answered %d, which breaks api/openapi.yaml: %v\nbody: %s", method, path, r.Status, err, resBody)
	} else {
		c.record(req, r.Status)
	}
	return r
}

// Get, Post and Patch are shorthands for Do.
func (c *Client) Get(path string, opts ...Option) *Response {
	return c.Do(http.MethodGet, path, nil, opts...)
}

func (c *Client) Post(path string, body any, opts ...Option) *Response {
	return c.Do(http.MethodPost, path, body, opts...)
}

func (c *Client) Patch(path string, body any, opts ...Option) *Response {
	return c.Do(http.MethodPatch, path, body, opts...)
}

func (c *Client) newRequest(method, path string, body any, opts []Option) (*http.Request, error) {
	var reader io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		reader = strings.NewReader(b)
	case []byte:
		reader = bytes.NewReader(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			return nil, err
		}
		reader = bytes.NewReader(data)
	}
	// The test's context: a request still running when its test ends is canceled.
	req, err := http.NewRequestWithContext(c.t.Context(), method, c.BaseURL+path, reader)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.APIKey)
	}
	for _, opt := range opts {
		opt(req)
	}
	return req, nil
}

// WantUnavailable fails the test unless r is the 503 a client gets while the database cannot
// answer: a service-unavailable problem with Retry-After, so the client knows to retry.
func (r *Response) WantUnavailable(t testing.TB, what string) {
	t.Helper()
	var p Problem
	_ = json.Unmarshal(r.Body, &p)
	if r.Status != http.StatusServiceUnavailable || p.Type != "/problems/service-unavailable" {
		t.Errorf("%s: %d %s, want 503 service-unavailable", what, r.Status, r.Body)
	}
	if r.Header.Get("Retry-After") == "" {
		t.Errorf("%s: 503 without Retry-After", what)
	}
}
