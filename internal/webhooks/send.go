package webhooks

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"time"

	oteltrace "go.opentelemetry.io/otel/trace"
)

// DefaultTimeout bounds one attempt, from dialling to the response headers (WEBHOOK_TIMEOUT).
const DefaultTimeout = 10 * time.Second

// maxDrainBytes is how much of a response body is read, so the connection can be reused; the
// body itself is never stored.
const maxDrainBytes = 64 << 10

// userAgent names the sender to receivers.
const userAgent = "payments-api-webhooks/1"

// Outcome is what an attempt means for its delivery.
type Outcome int

const (
	// Delivered: the receiver answered 2xx.
	Delivered Outcome = iota
	// Retry: anything else that may work later (5xx, 429, 3xx, 4xx, timeouts, refused
	// connections); RetryAfter is set when the receiver asked for a delay.
	Retry
	// Gone: 410, the receiver asks never to be called again; the endpoint is disabled.
	Gone
	// Refused: every address of the destination's host is one the SSRF guard refuses;
	// retrying cannot help.
	Refused
)

// Message is one signed POST: the same ID on every attempt, so receivers can dedupe.
type Message struct {
	URL     string
	ID      string   // webhook-id
	Body    []byte   // sent and signed byte for byte
	Secrets []string // one, or two during a rotation
	// EndpointID and Attempt (1 for the first) name the attempt in its span; neither is sent.
	EndpointID string
	Attempt    int
}

// Result is one attempt's record.
type Result struct {
	Outcome    Outcome
	Status     int // 0 when no response arrived
	Duration   time.Duration
	Error      string        // why it failed, a fixed text for the customer to read; "" when delivered
	RetryAfter time.Duration // from Retry-After on 429 and 503
}

// SenderOptions configure a Sender.
type SenderOptions struct {
	Timeout              time.Duration // DefaultTimeout when zero
	AllowPrivateNetworks bool          // also dial loopback and private addresses: local development and tests only
	Resolver             *net.Resolver // nil: net.DefaultResolver
	// TracerProvider, when set, records a span for every attempt (see startSpan).
	TracerProvider oteltrace.TracerProvider
}

// Sender posts webhooks. Safe for concurrent use.
type Sender struct {
	client  *http.Client
	timeout time.Duration
	urls    URLPolicy        // the dialer's rules and resolver, to look a refused host up again
	tracer  oteltrace.Tracer // nil: no spans
}

// NewSender builds the HTTP client every attempt goes through. It has no proxy (a proxy
// would dial on our behalf, past the address check) and follows no redirect (a redirect
// would send a signed payload somewhere the customer did not register).
func NewSender(opts SenderOptions) *Sender {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	dialer := &net.Dialer{Timeout: opts.Timeout, Resolver: opts.Resolver, Control: dialControl(opts.AllowPrivateNetworks)}
	transport := &http.Transport{
		Proxy:                 nil,
		DialContext:           dialer.DialContext,
		ForceAttemptHTTP2:     true,
		TLSHandshakeTimeout:   opts.Timeout,
		ResponseHeaderTimeout: opts.Timeout,
		MaxIdleConnsPerHost:   2,
		IdleConnTimeout:       90 * time.Second,
	}
	client := &http.Client{
		Transport:     transport,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	sender := &Sender{client: client, timeout: opts.Timeout,
		urls: URLPolicy{AllowPrivateNetworks: opts.AllowPrivateNetworks, Resolver: opts.Resolver}}
	if opts.TracerProvider != nil {
		sender.tracer = opts.TracerProvider.Tracer(instrumentation)
	}
	return sender
}

// Send makes one attempt at now (the webhook-timestamp), bounded by the sender's timeout.
func (s *Sender) Send(ctx context.Context, m Message, now time.Time) Result {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	ctx, span := s.startSpan(ctx, m)
	r := s.attempt(ctx, m, now)
	endSpan(span, r)
	return r
}

func (s *Sender) attempt(ctx context.Context, m Message, now time.Time) Result {
	start := time.Now()
	res, err := s.post(ctx, m, now)
	if err != nil {
		if errors.Is(err, ErrAddressRefused) && !s.refusedEverywhere(ctx, m.URL) {
			err = errSomeAddressRefused
		}
		r := Result{Outcome: Retry, Duration: time.Since(start), Error: failureReason(err)}
		if errors.Is(err, ErrAddressRefused) {
			r.Outcome = Refused
		}
		return r
	}
	// The receiver's answer is read only far enough to reuse the connection; what it says
	// beyond the status does not change the outcome, and neither does a failed close.
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, maxDrainBytes))
	_ = res.Body.Close()
	r := classify(res.StatusCode, res.Header.Get("Retry-After"), now)
	r.Duration = time.Since(start)
	return r
}

func (s *Sender) post(ctx context.Context, m Message, now time.Time) (*http.Response, error) {
	sig, err := Sign(m.ID, now, m.Body, m.Secrets...)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, m.URL, bytes.NewReader(m.Body))
	if err != nil {
		return nil, fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", userAgent)
	req.Header.Set(HeaderID, m.ID)
	req.Header.Set(HeaderTimestamp, strconv.FormatInt(now.Unix(), 10))
	req.Header.Set(HeaderSignature, sig)
	injectTraceparent(ctx, req.Header)
	return s.client.Do(req)
}

// errSomeAddressRefused replaces a refusal when the host has an address that may be dialled:
// the attempt is retried, with the catch-all reason, as the dialer reported only the refusal.
var errSomeAddressRefused = errors.New("an address was refused, but not every address of the host is")

// refusedEverywhere reports whether no address of the URL's host may be dialled. The dialer
// tries a host's addresses in turn and returns the first one's error, so a refusal may hide
// an allowed address that failed after it: the host is looked up again, as URLPolicy.Check
// looks it up, and a lookup that fails proves nothing.
func (s *Sender) refusedEverywhere(ctx context.Context, rawURL string) bool {
	u, err := url.Parse(rawURL)
	if err != nil {
		return false
	}
	host, err := dialledHost(u.Hostname())
	if err != nil {
		return true // an address in disguise, refused in every mode
	}
	addrs, ok := s.urls.addresses(ctx, host)
	if !ok {
		return false
	}
	// Unmapped: the resolver may give an IPv4 address in IPv4-mapped form (a literal, a hosts
	// file entry), which the dialer dials, and its Control hook checks, as IPv4.
	return !slices.ContainsFunc(addrs, func(a netip.Addr) bool { return checkAddr(a.Unmap(), s.urls.AllowPrivateNetworks) == nil })
}

// classify maps a response status to its outcome.
func classify(status int, retryAfter string, now time.Time) Result {
	r := Result{Status: status}
	switch {
	case status >= 200 && status < 300:
		r.Outcome = Delivered
		return r
	case status == http.StatusGone:
		r.Outcome = Gone
	default:
		r.Outcome = Retry
	}
	r.Error = fmt.Sprintf("receiver answered %d %s", status, http.StatusText(status))
	if status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable {
		r.RetryAfter = parseRetryAfter(retryAfter, now)
	}
	return r
}

// maxRetryAfter caps a receiver's Retry-After at the longest step of the default schedule.
const maxRetryAfter = 24 * time.Hour

// parseRetryAfter reads delay-seconds or an HTTP-date (RFC 9110); 0 when absent or invalid.
func parseRetryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	var d time.Duration
	// Out of int64's range, ParseInt answers its largest value: a delay past any cap.
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil || errors.Is(err, strconv.ErrRange) {
		d = time.Duration(min(max(secs, 0), int64(maxRetryAfter/time.Second))) * time.Second
	} else if t, err := http.ParseTime(v); err == nil {
		d = t.Sub(now)
	}
	return min(max(d, 0), maxRetryAfter)
}
