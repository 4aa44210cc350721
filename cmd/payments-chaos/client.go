package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// client sends the load's requests through HAProxy and records each exchange.
type client struct {
	base, key string
	http      *http.Client
	history   *history
}

// answer is one response, or none: status 0 when the answer was lost.
type answer struct {
	status    int
	header    http.Header
	body      []byte
	call, ret time.Duration
}

// lost says the request may or may not have taken effect: no answer came, or a 5xx (the
// contract: a 5xx on a POST may have committed).
func (a answer) lost() bool { return a.status == 0 || a.status >= 500 }

// do sends one request with a JSON body (nil for none) and the given headers.
func (c *client) do(ctx context.Context, method, path string, body any, headers ...string) answer {
	var reader io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			panic(err) // the load's own bodies always marshal
		}
		reader = bytes.NewReader(b)
	}
	a := answer{call: c.history.now()}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, reader)
	if err != nil {
		panic(err)
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := c.http.Do(req)
	if err == nil {
		a.body, err = io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if err == nil {
			a.status, a.header = resp.StatusCode, resp.Header
		}
	}
	a.ret = c.history.now()
	c.history.addExchange(exchange{Call: a.call, Return: a.ret, Status: a.status,
		RetryAfter: a.header.Get("Retry-After") != "", Write: method == http.MethodPost})
	return a
}

// pause waits before a retry: the answer's Retry-After (capped at a second, so the load
// keeps probing through a fault), else a fifth of a second.
func pause(ctx context.Context, a answer) {
	wait := 200 * time.Millisecond
	if s, err := strconv.Atoi(a.header.Get("Retry-After")); err == nil && s > 0 {
		wait = min(time.Duration(s)*time.Second, time.Second)
	}
	select {
	case <-ctx.Done():
	case <-time.After(wait):
	}
}

// etagVersion reads N from an ETag "vN"; 0 when it is not one.
func etagVersion(etag string) int64 {
	v, _ := strconv.ParseInt(strings.TrimPrefix(strings.Trim(etag, `"`), "v"), 10, 64)
	return v
}
