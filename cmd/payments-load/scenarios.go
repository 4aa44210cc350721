package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
)

// client sends the load's requests to one server with one API key.
//
// It is fasthttp's client, not net/http's: client and server share the machine's cores, and
// every microsecond the client spends is one the server does not get. net/http's client
// hands each request between three goroutines and allocates a Header map per answer, work
// fasthttp's client does not do, so more of the cores are left to the server measured.
type client struct {
	base          string
	authorization string // "Bearer <key>"
	http          *fasthttp.Client
	run           string        // a prefix that makes this run's idempotency keys unique,
	seq           atomic.Uint64 // and a counter that makes each of them unique within the run
}

// newClient is a client for the server at base with as many connections as conns.
func newClient(base, apiKey string, conns int) *client {
	return &client{
		base:          strings.TrimSuffix(base, "/"),
		authorization: "Bearer " + apiKey,
		http: &fasthttp.Client{
			MaxConnsPerHost:           conns,
			MaxConnWaitTimeout:        requestTimeout,
			ReadTimeout:               requestTimeout,
			WriteTimeout:              requestTimeout,
			MaxIdemponentCallAttempts: 1, // every failure is counted, none retried away
			NoDefaultUserAgentHeader:  true,
		},
		run: "load-" + rand.Text()[:10],
	}
}

// requestTimeout bounds every request, so a stuck server ends in errors, not a hung tool.
const requestTimeout = 10 * time.Second

// response is what a load request keeps of an answer: its status, body, and the two
// headers the scenarios check.
type response struct {
	status   int
	etag     string // ETag
	replayed string // Idempotent-Replayed
	body     []byte
}

func (c *client) do(ctx context.Context, method, path, body string, header map[string]string) (response, error) {
	if err := ctx.Err(); err != nil {
		return response{}, err
	}
	req, res := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(res)
	req.Header.SetMethod(method)
	req.SetRequestURI(c.base + path)
	req.Header.Set("Authorization", c.authorization)
	if body != "" {
		req.Header.SetContentType("application/json")
		req.SetBodyString(body)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	if err := c.http.DoTimeout(req, res, requestTimeout); err != nil {
		return response{}, err
	}
	return response{
		status:   res.StatusCode(),
		etag:     string(res.Header.Peek("ETag")),
		replayed: string(res.Header.Peek("Idempotent-Replayed")),
		body:     bytes.Clone(res.Body()), // res is reused once released
	}, nil
}

// expect sends a request and turns any status but want into an error that says what came back.
func (c *client) expect(ctx context.Context, want int, method, path, body string, header map[string]string) (response, error) {
	r, err := c.do(ctx, method, path, body, header)
	if err != nil {
		return r, err
	}
	return r, statusError(r, want)
}

func statusError(r response, want int) error {
	if r.status != want {
		return fmt.Errorf("status %d, want %d: %.200s", r.status, want, r.body)
	}
	return nil
}

const createBody = `{"amount":2500,"currency":"usd","payment_method":"pm_card_visa"}`

// payment is what a scenario needs of a payment it made during setup.
type payment struct {
	id, etag, key string
}

// createPayment makes a payment with a new key; amount is in minor units.
func (c *client) createPayment(ctx context.Context, key string, amount int) (payment, error) {
	body := fmt.Sprintf(`{"amount":%d,"currency":"usd","payment_method":"pm_card_visa"}`, amount)
	r, err := c.expect(ctx, http.StatusCreated, http.MethodPost, "/payments", body, map[string]string{"Idempotency-Key": key})
	if err != nil {
		return payment{}, fmt.Errorf("create payment: %w", err)
	}
	var p struct{ ID string }
	if err := json.Unmarshal(r.body, &p); err != nil {
		return payment{}, fmt.Errorf("create payment: %w", err)
	}
	return payment{id: p.ID, etag: r.etag, key: key}, nil
}

// key is a new idempotency key, never used before in this run or any other.
func (c *client) key(kind string) string {
	return fmt.Sprintf("%s-%s-%d", c.run, kind, c.seq.Add(1))
}

// fixtures are the payments the scenarios use, two per client, so clients never queue on
// one another's row locks: one that is only read and replayed (its ETag never changes, so
// If-None-Match keeps answering 304) and one that is refunded.
type fixtures struct {
	payments   []payment
	refundable []payment
}

// refundable is the amount of each fixture payment: one refund of 1 per request leaves
// room for far more requests than maxPerWorker allows.
const refundable = 99_999_999

func (c *client) setup(ctx context.Context, workers int) (*fixtures, error) {
	f := &fixtures{}
	for range workers {
		read, err := c.createPayment(ctx, c.key("fixture"), refundable)
		if err != nil {
			return nil, err
		}
		refund, err := c.createPayment(ctx, c.key("fixture"), refundable)
		if err != nil {
			return nil, err
		}
		f.payments, f.refundable = append(f.payments, read), append(f.refundable, refund)
	}
	return f, nil
}

// The HTTP scenarios' single requests. Each checks the answer is the one the scenario means
// to measure (a replay is a replay, a 304 is a 304).

func (c *client) create(ctx context.Context, _, _ int) error {
	r, err := c.expect(ctx, http.StatusCreated, http.MethodPost, "/payments", createBody, map[string]string{"Idempotency-Key": c.key("create")})
	if err == nil && r.replayed != "" {
		err = errors.New("a new key was answered as a replay")
	}
	return err
}

func (c *client) replay(f *fixtures) workload {
	return func(ctx context.Context, worker, _ int) error {
		p := f.payments[worker]
		body := fmt.Sprintf(`{"amount":%d,"currency":"usd","payment_method":"pm_card_visa"}`, refundable)
		r, err := c.expect(ctx, http.StatusCreated, http.MethodPost, "/payments", body, map[string]string{"Idempotency-Key": p.key})
		if err == nil && r.replayed != "true" {
			err = errors.New("a used key was not answered as a replay")
		}
		return err
	}
}

func (c *client) get(f *fixtures) workload {
	return func(ctx context.Context, worker, _ int) error {
		_, err := c.expect(ctx, http.StatusOK, http.MethodGet, "/payments/"+f.payments[worker].id, "", nil)
		return err
	}
}

func (c *client) getNotModified(f *fixtures) workload {
	return func(ctx context.Context, worker, _ int) error {
		p := f.payments[worker]
		_, err := c.expect(ctx, http.StatusNotModified, http.MethodGet, "/payments/"+p.id, "", map[string]string{"If-None-Match": p.etag})
		return err
	}
}

func (c *client) list(ctx context.Context, _, _ int) error {
	_, err := c.expect(ctx, http.StatusOK, http.MethodGet, "/payments?limit=10", "", nil)
	return err
}

func (c *client) refund(f *fixtures) workload {
	return func(ctx context.Context, worker, _ int) error {
		body := fmt.Sprintf(`{"payment_id":%q,"amount":1}`, f.refundable[worker].id)
		_, err := c.expect(ctx, http.StatusCreated, http.MethodPost, "/refunds", body, map[string]string{"Idempotency-Key": c.key("refund")})
		return err
	}
}

// mixed interleaves every kind of request in a fixed order, weighted towards reads as a
// client's traffic usually is: of 10 requests, 3 GET, 2 GET with If-None-Match, 1 list,
// 2 creates, 1 replay, 1 refund.
func (c *client) mixed(f *fixtures) workload {
	steps := []workload{
		c.get(f), c.getNotModified(f), c.create, c.list, c.get(f),
		c.replay(f), c.getNotModified(f), c.refund(f), c.create, c.get(f),
	}
	return func(ctx context.Context, worker, i int) error {
		return steps[(worker+i)%len(steps)](ctx, worker, i)
	}
}

// raceResult is what the same-key race measured.
type raceResult struct {
	sample          // requests, errors, and the latencies of the 409s
	rounds, charges int
}

// race sends size identical POSTs with one new key at the same instant, round after round,
// for d (at most maxRounds rounds). Exactly one of each round's requests may charge (a 201
// that is not a replay); the others answer 409 while it is in flight or replay it after.
// The latencies kept are the 409s': the promise is that they come at once.
func (c *client) race(ctx context.Context, size int, d time.Duration, maxRounds int) raceResult {
	var res raceResult
	start := time.Now()
	deadline := start.Add(d)
	for round := 0; round < maxRounds && time.Now().Before(deadline) && ctx.Err() == nil; round++ {
		key := c.key("race")
		type answer struct {
			r       response
			err     error
			latency time.Duration
		}
		answers := make(chan answer, size)
		gate := make(chan struct{})
		for range size {
			go func() {
				<-gate
				t0 := time.Now()
				r, err := c.do(ctx, http.MethodPost, "/payments", createBody, map[string]string{"Idempotency-Key": key})
				answers <- answer{r, err, time.Since(t0)}
			}()
		}
		close(gate)
		charged := 0
		for range size {
			a := <-answers
			res.requests++
			switch {
			case a.err == nil && a.r.status == http.StatusConflict:
				res.latencies = append(res.latencies, a.latency)
			case a.err == nil && a.r.status == http.StatusCreated && a.r.replayed == "true":
			case a.err == nil && a.r.status == http.StatusCreated:
				charged++
			default:
				res.errors++
				if res.firstErr == nil {
					res.firstErr = a.err
					if a.err == nil {
						res.firstErr = statusError(a.r, http.StatusConflict)
					}
				}
			}
		}
		res.rounds++
		res.charges += charged
		if charged != 1 {
			res.errors++
			if res.firstErr == nil {
				res.firstErr = fmt.Errorf("round %d charged %d times, want exactly once", round, charged)
			}
		}
	}
	res.elapsed = time.Since(start)
	return res
}
