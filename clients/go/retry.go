package paymentsapi

import (
	"context"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// RetryAfter is an http.RoundTripper that sends a request again, after waiting as long as the
// answer's Retry-After header says, when that answer is:
//   - 429 Too Many Requests, always: the server did nothing;
//   - 409 Conflict (/problems/idempotency-key-in-use) or 503 Service Unavailable
//     (/problems/service-unavailable, /problems/processor-unavailable), only when sending the
//     request again is safe: a GET, HEAD or OPTIONS, or a request with an Idempotency-Key,
//     whose result the server replays. A keyless POST, PATCH or DELETE may have committed
//     before a 503, so its answer goes back to the caller.
//
// The request sent again is the same, its Idempotency-Key included. An answer without a valid
// Retry-After, or with one longer than MaxWait or than the request has left (its context's
// deadline, http.Client.Timeout's among them), goes back to the caller at once: a wait the
// deadline would cut short would end in a timeout, and the answer, problem and all, be lost.
type RetryAfter struct {
	// Next sends the requests; http.DefaultTransport when nil.
	Next http.RoundTripper
	// MaxRetries bounds the retries of one request: 0 means the default, 3; a negative value
	// means none.
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
		// >=, not ==: a negative maxRetries allows no retry, rather than endless ones.
		if err != nil || retry >= maxRetries || !mayResend(req, res.StatusCode) {
			return res, err
		}
		wait, ok := retryAfter(res.Header.Get("Retry-After"), time.Now())
		if !ok || wait > maxWait || outlives(req.Context(), wait) || (req.Body != nil && req.GetBody == nil) {
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

// mayResend says whether an answer with this status may be retried with req as it is. The
// server sends Retry-After with a 409 only when the request's Idempotency-Key is in use, and
// with a 503 when it could not serve: a keyless write may have committed before the 503.
func mayResend(req *http.Request, status int) bool {
	switch status {
	case http.StatusTooManyRequests:
		return true
	case http.StatusConflict, http.StatusServiceUnavailable:
		switch req.Method {
		case "", http.MethodGet, http.MethodHead, http.MethodOptions: // "" is GET
			return true
		}
		return req.Header.Get("Idempotency-Key") != ""
	}
	return false
}

// retryAfter reads Retry-After as delay-seconds or an HTTP-date (RFC 9110 section 10.2.3).
// A delay too long for a time.Duration is the longest one, which MaxWait still turns back.
func retryAfter(value string, now time.Time) (time.Duration, bool) {
	if value != "" && strings.Trim(value, "0123456789") == "" { // delay-seconds is 1*DIGIT
		seconds, err := strconv.ParseInt(value, 10, 64)
		if err != nil || seconds > int64(math.MaxInt64/time.Second) { // err: out of int64's range
			return math.MaxInt64, true
		}
		return time.Duration(seconds) * time.Second, true
	}
	if at, err := http.ParseTime(value); err == nil {
		if strings.Contains(value, "-") { // RFC 850's form, whose year has two digits
			if !strings.HasSuffix(value, " GMT") {
				return 0, false // HTTP dates are in GMT; Go's parser takes any zone's name
			}
			at = at.AddDate(rfc850Year(at.Year(), now.Year())-at.Year(), 0, 0)
		}
		return max(at.Sub(now), 0), true
	}
	return 0, false
}

// rfc850Year is the year a two-digit year of RFC 850's date means at the year now: the one
// with its last two digits that is at most 50 years ahead (RFC 9110 section 5.6.7). Go's
// parser reads 69 to 99 as 1969 to 1999, so "01-Jan-70" would be a date long past, answered
// by a retry at once.
func rfc850Year(parsed, now int) int {
	year := now - now%100 + parsed%100
	if year > now+50 {
		year -= 100
	}
	return year
}

// outlives reports whether a wait of d would reach ctx's deadline: the retry could not be
// sent in time.
func outlives(ctx context.Context, d time.Duration) bool {
	deadline, ok := ctx.Deadline()
	return ok && time.Until(deadline) <= d
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
