package handlers_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/payments-api/payments-api/internal/app"
	"github.com/payments-api/payments-api/internal/webhooks"
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
// (WEBHOOK_ALLOW_PRIVATE_NETWORKS=true) and runs its job workers, webhook deliveries among
// them.
func setupDelivery(t testing.TB, opts deliveryOptions, more ...setupOption) *testBundle {
	t.Helper()
	return setup(t, append([]setupOption{withPrivateReceivers(), withConfig(func(c *app.Config) {
		c.Work = true
		c.JobWorkers = 1
		c.WebhookRetrySchedule = opts.schedule
		c.WebhookTimeout = opts.timeout
		c.WebhookWorkers = opts.workers
	})}, more...)...)
}

// withPrivateReceivers lets webhook endpoints be on this machine.
func withPrivateReceivers() setupOption {
	return withConfig(func(c *app.Config) { c.WebhookAllowPrivateNetworks = true })
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
