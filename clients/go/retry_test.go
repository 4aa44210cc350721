package paymentsapi

import (
	"io"
	"net/http"
	"net/http/httptest"
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

func TestRetryAfterGivesUp(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.Header().Set("Retry-After", r.URL.Query().Get("retry_after"))
		w.WriteHeader(http.StatusTooManyRequests)
	}))
	defer srv.Close()
	client := &http.Client{Timeout: 5 * time.Second, Transport: &RetryAfter{MaxRetries: 2, MaxWait: time.Second}}
	for _, tc := range []struct {
		retryAfter string
		calls      int32
	}{
		{"0", 3},    // retried MaxRetries times, then the 429 is the answer
		{"60", 1},   // longer than MaxWait: the caller decides
		{"soon", 1}, // not a Retry-After value
	} {
		calls.Store(0)
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL+"?retry_after="+tc.retryAfter, nil)
		res, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusTooManyRequests || calls.Load() != tc.calls {
			t.Errorf("Retry-After %q: %d after %d calls, want 429 after %d", tc.retryAfter, res.StatusCode, calls.Load(), tc.calls)
		}
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
	} {
		got, ok := retryAfter(tc.value, now)
		if got != tc.want || ok != tc.ok {
			t.Errorf("retryAfter(%q) = %s, %v; want %s, %v", tc.value, got, ok, tc.want, tc.ok)
		}
	}
}
