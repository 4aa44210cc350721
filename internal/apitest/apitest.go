// Package apitest is the HTTP side of the test harness: a client for a running server that
// checks every response it sees against api/openapi.yaml (status, headers, media type and
// body schema), so no test can pass on a response the contract does not document.
package apitest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"github.com/payments-api/payments-api/internal/api"
)

func init() {
	// kin-openapi decodes JSON, YAML and forms itself; the problem pages are HTML text.
	openapi3filter.RegisterBodyDecoder("text/html", openapi3filter.PlainBodyDecoder)
}

// RequestTimeout bounds every request a Client sends, far above any answer a test awaits, so
// a request that waits on a lock forever fails its test instead of hanging the package.
const RequestTimeout = 10 * time.Second

// httpClient is shared by every Client, so they share one pool of connections.
var httpClient = &http.Client{Timeout: RequestTimeout}

// Client sends requests to BaseURL with APIKey as the bearer token.
type Client struct {
	t       testing.TB
	BaseURL string
	APIKey  string
	spec    *openapi3.T
	router  routers.Router
}

// NewClient loads the embedded spec (a generated copy of api/openapi.yaml that CI keeps fresh).
func NewClient(t testing.TB, baseURL, apiKey string) *Client {
	t.Helper()
	spec, err := api.GetSpec()
	if err != nil {
		t.Fatalf("load spec: %v", err)
	}
	spec.Servers = nil
	router, err := gorillamux.NewRouter(spec)
	if err != nil {
		t.Fatalf("build router: %v", err)
	}
	return &Client{t: t, BaseURL: baseURL, APIKey: apiKey, spec: spec, router: router}
}

// WithKey is a copy of c that authenticates with another key.
func (c *Client) WithKey(apiKey string) *Client {
	cp := *c
	cp.APIKey = apiKey
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
	res, err := httpClient.Do(req)
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
	if err := c.validate(req, r); err != nil {
		c.t.Errorf("%s %s answered %d, which breaks api/openapi.yaml: %v\nbody: %s", method, path, r.Status, err, resBody)
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

// validate checks a response against the operation it answers. A request that matches no
// operation (404 for an unknown path, 405 for a wrong method) is checked against the shared
// NotFound / MethodNotAllowed responses instead. HEAD and OPTIONS follow the convention the
// spec states instead of listing them as operations (see internal/handlers/methods.go).
func (c *Client) validate(req *http.Request, r *Response) error {
	switch req.Method {
	case http.MethodHead:
		return c.validateHead(req, r)
	case http.MethodOptions:
		return c.validateOptions(req, r)
	}
	route, pathParams, err := c.router.FindRoute(req)
	if err != nil {
		return c.validateUnrouted(err, r, true)
	}
	return openapi3filter.ValidateResponse(context.Background(), &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: pathParams, Route: route},
		Status:                 r.Status,
		Header:                 r.Header,
		Body:                   io.NopCloser(bytes.NewReader(r.Body)),
		Options:                &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	})
}

// validateHead checks a HEAD response as the GET's: a status and headers (Content-Type
// included) that the GET operation documents, and no body.
func (c *Client) validateHead(req *http.Request, r *Response) error {
	if len(r.Body) != 0 {
		return fmt.Errorf("a response to HEAD has a %d-byte body", len(r.Body))
	}
	get := req.Clone(context.Background())
	get.Method = http.MethodGet
	route, pathParams, err := c.router.FindRoute(get)
	if err != nil {
		return c.validateUnrouted(err, r, false)
	}
	err = openapi3filter.ValidateResponse(context.Background(), &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: get, PathParams: pathParams, Route: route},
		Status:                 r.Status,
		Header:                 r.Header,
		Options:                &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true, ExcludeResponseBody: true},
	})
	if err != nil {
		return err
	}
	if res := route.Operation.Responses.Status(r.Status); res != nil && len(res.Value.Content) > 0 &&
		res.Value.Content.Get(r.Header.Get("Content-Type")) == nil {
		return fmt.Errorf("Content-Type %q is not documented for GET's %d", r.Header.Get("Content-Type"), r.Status)
	}
	return nil
}

// validateOptions checks an OPTIONS response: 204 with Allow listing exactly the spec's
// methods on the path, plus HEAD where there is a GET, plus OPTIONS; or 404 for no such path.
func (c *Client) validateOptions(req *http.Request, r *Response) error {
	methods, ok := c.pathMethods(req)
	if !ok {
		return c.validateUnrouted(routers.ErrPathNotFound, r, true)
	}
	if r.Status != http.StatusNoContent || len(r.Body) != 0 {
		return fmt.Errorf("OPTIONS answered %d with %d bytes, want 204 without a body", r.Status, len(r.Body))
	}
	if r.Header.Get("Request-Id") == "" {
		return errors.New("required header Request-Id is missing")
	}
	allow := strings.Split(r.Header.Get("Allow"), ",")
	for i := range allow {
		allow[i] = strings.TrimSpace(allow[i])
	}
	slices.Sort(allow)
	if !slices.Equal(allow, methods) {
		return fmt.Errorf("header Allow is %q, want the methods %v", r.Header.Get("Allow"), methods)
	}
	return nil
}

// pathMethods is what Allow must list for the request's path, sorted, and whether the spec
// has the path at all.
func (c *Client) pathMethods(req *http.Request) ([]string, bool) {
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPatch, http.MethodPut, http.MethodDelete} {
		probe := req.Clone(context.Background())
		probe.Method = m
		route, _, err := c.router.FindRoute(probe)
		if err != nil {
			continue
		}
		methods := []string{http.MethodOptions}
		for method := range route.PathItem.Operations() {
			methods = append(methods, method)
			if method == http.MethodGet {
				methods = append(methods, http.MethodHead)
			}
		}
		slices.Sort(methods)
		return methods, true
	}
	return nil, false
}

func (c *Client) validateUnrouted(routeErr error, r *Response, withBody bool) error {
	name, status := "NotFound", http.StatusNotFound
	if errors.Is(routeErr, routers.ErrMethodNotAllowed) {
		name, status = "MethodNotAllowed", http.StatusMethodNotAllowed
	}
	if r.Status != status {
		return fmt.Errorf("no operation matches (%w), so the status must be %d", routeErr, status)
	}
	ref := c.spec.Components.Responses[name]
	for h, hdr := range ref.Value.Headers {
		if hdr.Value.Required && r.Header.Get(h) == "" {
			return fmt.Errorf("required header %s is missing", h)
		}
	}
	mt := ref.Value.Content.Get(r.Header.Get("Content-Type"))
	if mt == nil {
		return fmt.Errorf("Content-Type %q is not documented", r.Header.Get("Content-Type"))
	}
	if !withBody {
		return nil // an answer to HEAD: status and headers are all there is to check
	}
	var body any
	if err := json.Unmarshal(r.Body, &body); err != nil {
		return err
	}
	return mt.Schema.Value.VisitJSON(body, openapi3.EnableJSONSchema2020())
}
