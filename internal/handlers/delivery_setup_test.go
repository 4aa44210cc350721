package handlers_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/payments-api/payments-api/internal/handlers"
	"github.com/payments-api/payments-api/internal/jobs"
	"github.com/payments-api/payments-api/internal/processor"
	"github.com/payments-api/payments-api/internal/testing/apitest"
	"github.com/payments-api/payments-api/internal/webhooks"
	"github.com/riverqueue/river"
)

// deliveryOptions configure the webhook workers of a test.
type deliveryOptions struct {
	schedule webhooks.Schedule
	timeout  time.Duration // WEBHOOK_TIMEOUT
	workers  int           // WEBHOOK_WORKERS
}

// defaultDelivery is what the server runs with by default, but for the retry schedule.
var defaultDelivery = deliveryOptions{
	schedule: webhooks.Schedule{time.Second, time.Second, time.Second},
	timeout:  webhooks.DefaultTimeout,
	workers:  20,
}

// setupDelivery is a server that accepts receivers on this machine
// (WEBHOOK_ALLOW_PRIVATE_NETWORKS=true), with webhook workers running on its database.
func setupDelivery(t testing.TB, opts deliveryOptions) *testBundle {
	t.Helper()
	pool, url := seededDB(t)
	b := servePrivateReceivers(t, pool)
	b.dbURL = url
	startDeliveryWorkers(t, pool, opts)
	return b
}

// servePrivateReceivers starts a server on pool whose endpoints may be on this machine.
func servePrivateReceivers(t testing.TB, pool *pgxpool.Pool) *testBundle {
	t.Helper()
	logs := &syncBuffer{}
	opts := testOptions(t, pool, processor.Simulated{}, slog.New(slog.NewJSONHandler(logs, nil)))
	opts.RateLimits = generousLimits()
	opts.Webhooks = webhooks.NewService(pool, webhooks.URLPolicy{AllowPrivateNetworks: true}, webhooks.NewJobQueue(insertOnlyQueue(t, pool)))
	e, err := handlers.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)
	client := apitest.NewClient(t, srv.URL, testKey)
	return &testBundle{client: client, other: client.WithKey(otherKey), pool: pool, echo: e, logs: logs}
}

// startDeliveryWorkers runs the webhooks queue on pool, as a server process does, until the
// test ends.
func startDeliveryWorkers(t testing.TB, pool *pgxpool.Pool, opts deliveryOptions) *river.Client[pgx.Tx] {
	t.Helper()
	sender := webhooks.NewSender(webhooks.SenderOptions{Timeout: opts.timeout, AllowPrivateNetworks: true})
	registry := river.NewWorkers()
	river.AddWorker(registry, webhooks.NewWorker(webhooks.NewDeliverer(pool, sender, opts.schedule)))
	client, err := jobs.NewClient(pool, jobs.Config{
		Workers: 1, Queues: map[string]river.QueueConfig{webhooks.QueueName: webhooks.QueueConfig(opts.workers)},
		Timeout: time.Minute, RescueAfter: 2 * time.Minute, Work: true, Registry: registry,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := client.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if err := client.StopAndCancel(ctx); err != nil {
			t.Errorf("stop webhook workers: %v", err)
		}
	})
	return client
}

// hook is one request a receiver got.
type hook struct {
	header http.Header
	body   []byte
	at     time.Time
}

// newReceiver is a webhook receiver on this machine: it hands every request to the returned
// channel, then answers with reply.
func newReceiver(t testing.TB, reply http.HandlerFunc) (url string, got <-chan hook) {
	t.Helper()
	ch := make(chan hook, 1000)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		ch <- hook{header: r.Header.Clone(), body: body, at: time.Now()}
		reply(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/hooks", ch
}

// next waits for the receiver's next request, for at most within.
func next(t *testing.T, got <-chan hook, within time.Duration) hook {
	t.Helper()
	select {
	case h := <-got:
		return h
	case <-time.After(within):
		t.Fatalf("no webhook arrived within %s", within)
		return hook{}
	}
}
