package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/payments-api/payments-api/internal/testing/apitest"
	"github.com/payments-api/payments-api/internal/testing/integration"
)

func TestMain(m *testing.M) { integration.Main(m) }

const testKey = "sk_test_listen"

// received is one request the test receiver got.
type received struct {
	header http.Header
	body   []byte
}

// createPayment makes a succeeded payment on the server at base and returns its id.
func createPayment(t *testing.T, base, card string) string {
	t.Helper()
	res := apitest.NewClient(t, base, testKey).Post("/payments",
		map[string]any{"amount": 700, "currency": "usd", "payment_method": card},
		apitest.Header("Idempotency-Key", card+time.Now().String()))
	var p struct{ ID string }
	if res.Status != http.StatusCreated {
		t.Fatalf("create payment: %d %s", res.Status, res.Body)
	}
	res.Decode(t, &p)
	return p.ID
}

// TestListenForwardsSignedEvents runs listen with -forward-to against a real
// server and an httptest receiver: events that happen after it starts are printed and
// arrive, and their signatures verify with the official Standard Webhooks library under the
// secret listen printed. Events from before it started are not sent.
func TestListenForwardsSignedEvents(t *testing.T) {
	t.Parallel()
	r := integration.Start(t, map[string]string{"DEMO_API_KEYS": testKey})
	before := createPayment(t, r.Base, "pm_card_visa")

	got := make(chan received, 10)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		got <- received{req.Header.Clone(), body}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(receiver.Close)

	out := &integration.SyncBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	opts, err := parseFlags([]string{"--api-url", r.Base, "--api-key", testKey, "--forward-to", receiver.URL, "--interval", "50ms"})
	if err != nil {
		t.Fatal(err)
	}
	go func() { done <- listen(ctx, opts, out) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("listen: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("listen did not return within 10s of its context's end")
		}
	})
	integration.WaitFor(t, func() bool { return strings.Contains(out.String(), "Listening for") })
	secret := regexp.MustCompile(`whsec_[A-Za-z0-9+/=]+`).FindString(out.String())
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatalf("the secret listen printed (%q): %v", secret, err)
	}

	succeeded := createPayment(t, r.Base, "pm_card_visa")
	var messages []received
	for len(messages) < 1 {
		select {
		case m := <-got:
			messages = append(messages, m)
		case <-time.After(10 * time.Second):
			t.Fatalf("no event forwarded within 10s; listen printed:\n%s", out.String())
		}
	}
	m := messages[0]
	if err := wh.Verify(m.body, m.header); err != nil {
		t.Errorf("the official library refuses the signature: %v\n%s %v", err, m.body, m.header)
	}
	tampered := bytes.Replace(m.body, []byte("700"), []byte("701"), 1)
	if err := wh.Verify(tampered, m.header); err == nil {
		t.Error("a tampered body verifies: the check proves nothing")
	}
	var payload struct {
		Type string
		Data struct{ ID string }
	}
	if err := json.Unmarshal(m.body, &payload); err != nil || payload.Type != "payment.succeeded" || payload.Data.ID != succeeded {
		t.Errorf("forwarded %s (%v), want payment.succeeded of %s", m.body, err, succeeded)
	}
	if !strings.HasPrefix(m.header.Get("webhook-id"), "msg_") {
		t.Errorf("webhook-id %q", m.header.Get("webhook-id"))
	}
	integration.WaitFor(t, func() bool { return strings.Contains(out.String(), succeeded) })
	line := regexp.MustCompile(`(?m)^\S+Z  payment\.succeeded\s+evt_\S+  ` + succeeded + `  -> 204 No Content$`)
	if !line.MatchString(out.String()) {
		t.Errorf("no line with time, type, event id, payment id and the receiver's answer:\n%s", out.String())
	}
	select {
	case extra := <-got:
		t.Errorf("a second message arrived: %s", extra.body)
	case <-time.After(300 * time.Millisecond): // six more polls
	}
	if strings.Contains(out.String(), before) {
		t.Errorf("the payment made before listen started was shown:\n%s", out.String())
	}
}

func TestListenFlags(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"--forward-to", "localhost:3000"}, {"--interval", "0s"}, {"--secret", "nope"}, {"extra"}, {"--nope"},
	} {
		if _, err := parseFlags(args); err == nil {
			t.Errorf("payments-listen %v: accepted", args)
		}
	}
	if _, err := parseFlags([]string{"-h"}); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("payments-listen -h: %v, want flag.ErrHelp (the usage printed)", err)
	}
}
