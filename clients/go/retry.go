package paymentsapi

import (
	"context"
	"net/http"
	"strconv"
	"time"
)

// RetryAfter is an http.RoundTripper that sends a request again when the answer is
// 429 Too Many Requests with a Retry-After header, after waiting as long as it says. A 429
// means the server did nothing, so sending the same request again is always safe (a POST
// keeps its Idempotency-Key, since the request is the same).
type RetryAfter struct {
	// Next sends the requests; http.DefaultTransport when nil.
	Next http.RoundTripper
	// MaxRetries bounds the retries of one request (default 3).
	MaxRetries int
	// MaxWait bounds one wait; a longer Retry-After is returned to the caller (default 10s).
	MaxWait time.Duration
	// OnRetry, when set, is told of every retry before its wait.
	OnRetry func(res *http.Response, wait time.Duration)
}

// RoundTrip implements http.RoundTripper.
func (t *RetryAfter) RoundTrip(req *http.Request) (*http.Response, error) {
	next, maxRetries, maxWait := t.Next, t.MaxRetries, t.MaxWait
	if next == nil {
		next = http.DefaultTransport
	}
	if maxRetries == 0 {
		maxRetries = 3
	}
	if maxWait == 0 {
		maxWait = 10 * time.Second
	}
	for retry := 0; ; retry++ {
		res, err := next.RoundTrip(req)
		if err != nil || res.StatusCode != http.StatusTooManyRequests || retry == maxRetries {
			return res, err
		}
		wait, ok := retryAfter(res.Header.Get("Retry-After"), time.Now())
		if !ok || wait > maxWait || (req.Body != nil && req.GetBody == nil) {
			return res, nil
		}
		if t.OnRetry != nil {
			t.OnRetry(res, wait)
		}
		res.Body.Close() //nolint:errcheck // the answer is dropped for the retry's
		if req, err = rewind(req); err != nil {
			return nil, err
		}
		if err := sleep(req.Context(), wait); err != nil {
			return nil, err
		}
	}
}

// retryAfter reads Retry-After as delay-seconds or an HTTP-date (RFC 9110 section 10.2.3).
func retryAfter(value string, now time.Time) (time.Duration, bool) {
	if seconds, err := strconv.Atoi(value); err == nil && seconds >= 0 {
		return time.Duration(seconds) * time.Second, true
	}
	if at, err := http.ParseTime(value); err == nil {
		return max(at.Sub(now), 0), true
	}
	return 0, false
}

// rewind is req with a fresh copy of its body, to send it again.
func rewind(req *http.Request) (*http.Request, error) {
	if req.GetBody == nil {
		return req, nil
	}
	body, err := req.GetBody()
	if err != nil {
		return nil, err
	}
	again := req.Clone(req.Context())
	again.Body = body
	return again, nil
}

func sleep(ctx context.Context, d time.Duration) error {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// BearerAuth is a RequestEditorFn that authenticates every request with apiKey.
func BearerAuth(apiKey string) RequestEditorFn {
	return func(_ context.Context, req *http.Request) error {
		req.Header.Set("Authorization", "Bearer "+apiKey)
		return nil
	}
}
