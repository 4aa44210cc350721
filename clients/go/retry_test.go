package paymentsapi

import (
	"context"
	"errors"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestRetryAfterSendsTheSameRequestAgain(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if string(body) != `{"amount":5000}` || r.Header.Get("Idempotency-Key") != "k1" {
			t.Errorf("attempt %d: body %q, key %q", calls.Load()+1, body, r.Header.Get("Idempotency-Key"))
		}
		if calls.Add(1) == 1 {
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		w.WriteHeader(http.StatusCreated)
	}))
	defer srv.Close()

	var waits []time.Duration
	client := &http.Client{Timeout: 5 * time.Second, Transport: &RetryAfter{
		OnRetry: func(_ *http.Response, wait time.Duration) { waits = append(waits, wait) },
	}}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL, strings.NewReader(`{"amount":5000}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Idempotency-Key", "k1")
	res, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusCreated || calls.Load() != 2 || len(waits) != 1 || waits[0] != 0 {
		t.Errorf("status %d after %d calls, waits %v: want 201 after 2 calls, one wait of 0s", res.StatusCode, calls.Load(), waits)
	}
}

// The request sent again is a copy: the caller's request keeps its own body; a request whose
// body cannot be read again is not sent again (it would go out empty); and a request with no
// method is a GET, as net/http reads it.
func TestRetryAfterResendsOnlyWhatItCanAndLeavesTheCallersRequest(t *testing.T) {
	srv, calls := refusesOnce(t)
	send := func(req *http.Request) (status int, sent int32) {
		t.Helper()
		calls.Store(0)
		res, err := (&RetryAfter{}).RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode, calls.Load()
	}

	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL+"?status=503", strings.NewReader("{}"))
	req.Header.Set("Idempotency-Key", "k1")
	body := req.Body
	if status, sent := send(req); status != http.StatusOK || sent != 2 || req.Body != body {
		t.Errorf("a rewindable body: %d after %d calls, caller's body replaced: %v; want 200 after 2, the caller's request as it was", status, sent, req.Body != body)
	}

	once, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL+"?status=503", struct{ io.Reader }{strings.NewReader("{}")})
	once.Header.Set("Idempotency-Key", "k2")
	if status, sent := send(once); status != http.StatusServiceUnavailable || sent != 1 {
		t.Errorf("a body that cannot be read again: %d after %d calls, want the 503 after 1", status, sent)
	}

	noMethod, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL+"?status=503", nil)
	noMethod.Method = ""
	if status, sent := send(noMethod); status != http.StatusOK || sent != 2 {
		t.Errorf("no method (a GET): %d after %d calls, want 200 after 2", status, sent)
	}
}

func TestRetryAfterGivesUp(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.Header().Set("Retry-After", r.URL.Query().Get("retry_after"))
		w.WriteHeader(http.StatusTooManyRequests)
	}))
	defer srv.Close()
	for _, tc := range []struct {
		retryAfter string
		maxRetries int
		calls      int32
	}{
		{"0", 2, 3},                    // retried MaxRetries times, then the 429 is the answer
		{"0", 0, 4},                    // the default, 3
		{"0", -1, 1},                   // negative: no retries
		{"60", 2, 1},                   // longer than MaxWait: the caller decides
		{"9300000000", 2, 1},           // too long for a time.Duration: still longer than MaxWait
		{"99999999999999999999", 2, 1}, // too long for an int64
		{"soon", 2, 1},                 // not a Retry-After value
	} {
		calls.Store(0)
		client := &http.Client{Timeout: 5 * time.Second, Transport: &RetryAfter{MaxRetries: tc.maxRetries, MaxWait: time.Second}}
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL+"?retry_after="+tc.retryAfter, nil)
		res, err := client.Do(req)
		if err != nil {
			t.Fatalf("Retry-After %q, MaxRetries %d: %v", tc.retryAfter, tc.maxRetries, err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusTooManyRequests || calls.Load() != tc.calls {
			t.Errorf("Retry-After %q, MaxRetries %d: %d after %d calls, want 429 after %d",
				tc.retryAfter, tc.maxRetries, res.StatusCode, calls.Load(), tc.calls)
		}
	}
}

// An answer whose Retry-After the request's deadline would cut short goes back at once, 429
// and all, rather than a timeout at the deadline: whether the deadline is http.Client's or
// the context's.
func TestRetryAfterReturnsWhatItCannotWaitOut(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		calls.Add(1)
		w.Header().Set("Retry-After", "8")
		w.WriteHeader(http.StatusTooManyRequests)
	}))
	defer srv.Close()
	for name, tc := range map[string]struct {
		clientTimeout, contextTimeout time.Duration
	}{
		"http.Client.Timeout": {5 * time.Second, 0},
		"the context's":       {0, 5 * time.Second},
	} {
		calls.Store(0)
		ctx := t.Context()
		if tc.contextTimeout > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, tc.contextTimeout)
			defer cancel()
		}
		client := &http.Client{Timeout: tc.clientTimeout, Transport: &RetryAfter{MaxWait: time.Minute}}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
		began := time.Now()
		res, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s: %v after %s, want the 429 at once", name, err, time.Since(began))
		}
		res.Body.Close()
		if res.StatusCode != http.StatusTooManyRequests || calls.Load() != 1 {
			t.Errorf("%s: %d after %d calls, want the 429 after 1", name, res.StatusCode, calls.Load())
		}
	}
}

// A 429 is always sent again; a 409 or a 503 only when sending it again cannot do the work
// twice: a safe method, or an Idempotency-Key the server replays.
func TestRetryAfterRetriesOnlyWhatIsSafeToSendAgain(t *testing.T) {
	srv, calls := refusesOnce(t)
	client := &http.Client{Timeout: 5 * time.Second, Transport: &RetryAfter{}}
	for _, tc := range []struct {
		method string
		key    bool
		status int
		calls  int32
	}{
		{http.MethodPost, false, http.StatusTooManyRequests, 2},
		{http.MethodPost, true, http.StatusConflict, 2},
		{http.MethodPost, true, http.StatusServiceUnavailable, 2},
		{http.MethodPatch, true, http.StatusServiceUnavailable, 2},
		{http.MethodGet, false, http.StatusServiceUnavailable, 2},
		{http.MethodHead, false, http.StatusServiceUnavailable, 2},
		{http.MethodOptions, false, http.StatusConflict, 2},
		{http.MethodPost, false, http.StatusConflict, 1},
		{http.MethodPost, false, http.StatusServiceUnavailable, 1}, // it may have committed
		{http.MethodPatch, false, http.StatusServiceUnavailable, 1},
		{http.MethodDelete, false, http.StatusServiceUnavailable, 1},
		{http.MethodGet, false, http.StatusInternalServerError, 1},
	} {
		calls.Store(0)
		req, _ := http.NewRequestWithContext(t.Context(), tc.method, srv.URL+"?status="+strconv.Itoa(tc.status), strings.NewReader("{}"))
		if tc.key {
			req.Header.Set("Idempotency-Key", "k1")
		}
		res, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		want := http.StatusOK
		if tc.calls == 1 {
			want = tc.status
		}
		if res.StatusCode != want || calls.Load() != tc.calls {
			t.Errorf("%s (key %v) answered %d: %d after %d calls, want %d after %d",
				tc.method, tc.key, tc.status, res.StatusCode, calls.Load(), want, tc.calls)
		}
	}
}

func TestRetryAfterStopsWaitingWhenCanceled(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Retry-After", "5")
		w.WriteHeader(http.StatusTooManyRequests)
	}))
	defer srv.Close()
	ctx, cancel := context.WithCancel(t.Context())
	client := &http.Client{Timeout: 10 * time.Second, Transport: &RetryAfter{
		OnRetry: func(*http.Response, time.Duration) { cancel() },
	}}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	began := time.Now()
	res, err := client.Do(req)
	if err == nil {
		res.Body.Close()
	}
	if !errors.Is(err, context.Canceled) || time.Since(began) > 2*time.Second {
		t.Errorf("canceled during a 5s Retry-After: %v after %s, want context.Canceled at once", err, time.Since(began))
	}
}

func TestRetryAfterValue(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		value string
		want  time.Duration
		ok    bool
	}{
		{"3", 3 * time.Second, true},
		{"0", 0, true},
		{"Fri, 02 Jan 2026 03:04:15 GMT", 10 * time.Second, true},
		{"Fri, 02 Jan 2026 03:04:00 GMT", 0, true}, // in the past: at once
		{"-1", 0, false},
		{"", 0, false},
		{"1.5", 0, false},
		{"+5", 0, false},
		{"9300000000", math.MaxInt64, true},
		{"99999999999999999999", math.MaxInt64, true},
		{"Friday, 02-Jan-26 03:04:15 GMT", 10 * time.Second, true}, // RFC 850
		// RFC 850's two-digit year is the one at most 50 years ahead (RFC 9110): 70 is 2070,
		// not the 1970 of Go's parser, so the date is 44 years away and past MaxWait's reach.
		{"Thursday, 01-Jan-70 00:00:00 GMT", time.Date(2070, 1, 1, 0, 0, 0, 0, time.UTC).Sub(now), true},
		{"Friday, 02-Jan-26 03:04:15 PST", 0, false},         // an HTTP date is in GMT
		{"Fri Jan  2 03:04:15 2026", 10 * time.Second, true}, // asctime
	} {
		got, ok := retryAfter(tc.value, now)
		if got != tc.want || ok != tc.ok {
			t.Errorf("retryAfter(%q) = %s, %v; want %s, %v", tc.value, got, ok, tc.want, tc.ok)
		}
	}
}

// refusesOnce is a server whose first answer since calls was last zeroed has the status its
// query names (?status=503) and Retry-After: 0, and every other answer is 200.
func refusesOnce(t *testing.T) (srv *httptest.Server, calls *atomic.Int32) {
	calls = &atomic.Int32{}
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			status, _ := strconv.Atoi(r.URL.Query().Get("status"))
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(status)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(srv.Close)
	return srv, calls
}

// An answer dropped for a retry is closed before the retry is sent, and the answer returned
// is left open for the caller: an unclosed body would hold its connection, which the
// transport could then not reuse.
func TestRetryAfterClosesTheAnswerItDrops(t *testing.T) {
	var bodies []*trackedBody
	next := roundTripFunc(func(req *http.Request) (*http.Response, error) {
		for i, b := range bodies {
			if !b.closed.Load() {
				t.Errorf("attempt %d sent with answer %d still open", len(bodies)+1, i+1)
			}
		}
		status, header := http.StatusServiceUnavailable, http.Header{"Retry-After": {"0"}}
		if len(bodies) == 2 {
			status, header = http.StatusOK, http.Header{}
		}
		b := &trackedBody{Reader: strings.NewReader("{}")}
		bodies = append(bodies, b)
		return &http.Response{StatusCode: status, Header: header, Body: b, Request: req}, nil
	})
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://payments.invalid/payments", nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := (&RetryAfter{Next: next}).RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusOK || len(bodies) != 3 {
		t.Fatalf("%d after %d attempts, want 200 after 3", res.StatusCode, len(bodies))
	}
	if bodies[2].closed.Load() {
		t.Error("the answer returned was closed before the caller read it")
	}
	res.Body.Close()
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// trackedBody is a response body that remembers being closed.
type trackedBody struct {
	io.Reader
	closed atomic.Bool
}

func (b *trackedBody) Close() error {
	b.closed.Store(true)
	return nil
}
