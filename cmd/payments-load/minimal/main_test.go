package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/payments-api/payments-api/internal/accounts"
	"github.com/payments-api/payments-api/internal/testing/dbtest"
)

const testKey = "sk_test_minimal"

// TestCreateWritesWhatTheServerWrites: the floor's create is only fair if it does the
// server's work. A new key makes the payment, its event and the stored 201 in one
// transaction; the key again answers 409 and writes nothing; the payment reads back.
func TestCreateWritesWhatTheServerWrites(t *testing.T) {
	pool, _ := dbtest.NewPool(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := accounts.SeedDemoKeys(ctx, pool, []string{testKey}); err != nil {
		t.Fatal(err)
	}
	e, err := newServer(ctx, pool, testKey, &url.URL{Scheme: "http", Host: "127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(e)
	defer srv.Close()
	client := &http.Client{Timeout: 10 * time.Second}

	send := func(method, path, key string) (int, http.Header, []byte) {
		t.Helper()
		var body io.Reader
		if method == http.MethodPost {
			body = strings.NewReader(`{"amount":2500,"currency":"usd","payment_method":"pm_card_visa"}`)
		}
		req, err := http.NewRequestWithContext(ctx, method, srv.URL+path, body)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+testKey)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", key)
		res, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		if err != nil {
			t.Fatal(err)
		}
		return res.StatusCode, res.Header, b
	}

	status, header, body := send(http.MethodPost, "/payments", "k1")
	if status != http.StatusCreated || header.Get("Location") == "" {
		t.Fatalf("create: %d, Location %q: %s", status, header.Get("Location"), body)
	}
	if status, _, _ := send(http.MethodPost, "/payments", "k1"); status != http.StatusConflict {
		t.Errorf("the same key again: %d, want 409", status)
	}
	var created struct{ ID string }
	if err := json.Unmarshal(body, &created); err != nil {
		t.Fatal(err)
	}
	if status, _, body := send(http.MethodGet, header.Get("Location"), ""); status != http.StatusOK || !strings.Contains(string(body), created.ID) {
		t.Errorf("read back: %d %s", status, body)
	}

	var payments, events, stored int
	err = pool.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM payments),
		(SELECT count(*) FROM events WHERE type = 'payment.succeeded'),
		(SELECT count(*) FROM idempotency_keys WHERE key = 'k1' AND response_status = 201)`).Scan(&payments, &events, &stored)
	if err != nil {
		t.Fatal(err)
	}
	if payments != 1 || events != 1 || stored != 1 {
		t.Errorf("%d payments, %d events, %d stored responses; want one each", payments, events, stored)
	}
}
