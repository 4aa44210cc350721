package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/payments-api/payments-api/internal/webhooks"
)

// receiver is the webhook endpoint the run registers: it checks each delivery's signature
// and counts deliveries by webhook-id, so duplicates show.
type receiver struct {
	verifier atomic.Pointer[webhooks.Verifier]
	mu       sync.Mutex
	seen     map[string]int // webhook-id → deliveries received
	unsigned atomic.Int64   // deliveries whose signature did not verify
	url      string
}

func startReceiver(ctx context.Context) (*receiver, error) {
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &receiver{seen: map[string]int{}, url: "http://" + ln.Addr().String() + "/webhooks"}
	srv := &http.Server{Handler: r, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln) //nolint:errcheck // lives as long as the run
	return r, nil
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	v := r.verifier.Load()
	if err != nil || v == nil || v.Verify(req.Header, body) != nil {
		r.unsigned.Add(1)
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	r.seen[req.Header.Get(webhooks.HeaderID)]++
	r.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// counts returns how many distinct webhook-ids came and how many deliveries repeated one.
func (r *receiver) counts() (distinct, duplicates int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, n := range r.seen {
		distinct++
		duplicates += n - 1
	}
	return distinct, duplicates
}
