package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeStripeMock stands in for stripe-mock, which need not be installed where the tests run.
// It answers status to the two requests the load tool sends, as stripe-mock takes them, and
// 400 with the reason to anything else, so a wrong request fails the workload with a
// message that names what was wrong. It records the idempotency keys of the creates.
type fakeStripeMock struct {
	status int
	mu     sync.Mutex
	keys   []string
}

func (f *fakeStripeMock) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if err := f.check(r); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(f.status)
	_, _ = w.Write([]byte(`{"object":"payment_intent"}`))
}

func (f *fakeStripeMock) check(r *http.Request) error {
	// stripe-mock's own rule: a Bearer key of three parts, sk or rk, then test.
	key, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if parts := strings.Split(key, "_"); len(parts) != 3 || parts[0] != "sk" || parts[1] != "test" || parts[2] == "" {
		return fmt.Errorf("authorization %q is not a test key stripe-mock accepts", r.Header.Get("Authorization"))
	}
	switch {
	case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/v1/payment_intents/pi_") && r.URL.RawQuery == "":
		return nil
	case r.Method == http.MethodPost && r.URL.Path == "/v1/payment_intents":
		return f.checkCreate(r)
	}
	return fmt.Errorf("unexpected %s %s", r.Method, r.URL)
}

func (f *fakeStripeMock) checkCreate(r *http.Request) error {
	if ct := r.Header.Get("Content-Type"); ct != "application/x-www-form-urlencoded" {
		return fmt.Errorf("content type %q, want a form", ct)
	}
	if err := r.ParseForm(); err != nil {
		return err
	}
	want := url.Values{"amount": {"2500"}, "currency": {"usd"}, "payment_method": {"pm_card_visa"}}
	if r.PostForm.Encode() != want.Encode() {
		return fmt.Errorf("form %q, want %q", r.PostForm.Encode(), want.Encode())
	}
	key := r.Header.Get("Idempotency-Key")
	if key == "" {
		return fmt.Errorf("no Idempotency-Key")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.keys = append(f.keys, key)
	return nil
}

// createKeys are the idempotency keys of the creates received so far.
func (f *fakeStripeMock) createKeys() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.keys)
}

func startFakeStripeMock(t *testing.T, status int) (*fakeStripeMock, string) {
	t.Helper()
	f := &fakeStripeMock{status: status}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv.URL
}

// TestStripeMockRequests sends get and create as stripe-mock takes them: the fake refuses
// any other method, path, key, body or a missing key, and every create has a key of its own.
func TestStripeMockRequests(t *testing.T) {
	f, mockURL := startFakeStripeMock(t, http.StatusOK)
	sm := newStripeMock(mockURL, 1)
	defer sm.close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, name := range []string{"get", "create", "create"} {
		if err := sm.workload(name)(ctx, 0, 0); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if keys := f.createKeys(); len(keys) != 2 || keys[0] == keys[1] {
		t.Errorf("idempotency keys %q, want two different ones", keys)
	}
	for _, name := range scenarioNames() {
		if has := sm.workload(name) != nil; has != (name == "get" || name == "create") {
			t.Errorf("%s: stripe-mock workload %v, want one for get and create only", name, has)
		}
	}
}

// TestStripeMockAnswersOtherThan200AreErrors: stripe-mock answers both requests 200 (a
// create too), so a 201 is as wrong as a 500.
func TestStripeMockAnswersOtherThan200AreErrors(t *testing.T) {
	_, mockURL := startFakeStripeMock(t, http.StatusCreated)
	sm := newStripeMock(mockURL, 1)
	defer sm.close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, name := range []string{"get", "create"} {
		if err := sm.workload(name)(ctx, 0, 0); err == nil || !strings.Contains(err.Error(), "status 201, want 200") {
			t.Errorf("%s answered 201: %v, want a status error", name, err)
		}
	}
}

// TestStripeMockIsMeasuredInTheSameSlices runs get, create and list against the server with
// stripe-mock beside it: get and create get its rate and a ratio in their own columns; list,
// which it is not compared on, gets none.
func TestStripeMockIsMeasuredInTheSameSlices(t *testing.T) {
	baseURL, _ := startServer(t)
	f, mockURL := startFakeStripeMock(t, http.StatusOK)
	results, out := runShort(t, config{
		URL: baseURL, APIKey: smokeKey, StripeMock: mockURL,
		Scenarios: []string{"get", "create", "list"},
	})
	for _, r := range results {
		measured := r.stripeMock.rate > 0 && r.stripeMock.ratio > 0 && r.stripeMock.note == ""
		if measured != (r.name == "get" || r.name == "create") {
			t.Errorf("%s: stripe-mock %+v", r.name, r.stripeMock)
		}
	}
	keys := f.createKeys()
	if unique := slices.Compact(slices.Sorted(slices.Values(keys))); len(keys) == 0 || len(unique) != len(keys) {
		t.Errorf("stripe-mock got %d creates with %d different keys, want some, each with its own", len(keys), len(unique))
	}
	if !strings.Contains(out, "ratio vs stripe-mock") {
		t.Errorf("no stripe-mock column in\n%s", out)
	}
}
