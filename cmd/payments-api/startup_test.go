package main

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/payments-api/payments-api/internal/testing/dbtest"
	"github.com/payments-api/payments-api/internal/testing/integration"
)

// TestStartupWaitsForTheDatabase starts the server while the database refuses connections
// (as under docker compose, before PostgreSQL is up): it retries instead of exiting, and
// serves as soon as the database is there.
func TestStartupWaitsForTheDatabase(t *testing.T) {
	t.Parallel()
	proxy, url := dbtest.NewProxy(t, dbtest.NewURL(t))
	proxy.Refuse()
	r := startServe(t, map[string]string{"DATABASE_URL": url, "DATABASE_CONNECT_TIMEOUT": "30s"}, false)
	integration.WaitFor(t, func() bool { return r.logged(`"level":"WARN"`, "database unreachable, retrying") })

	proxy.Resume()
	integration.WaitFor(t, func() bool { return r.status("/readyz") == http.StatusOK })
}

// TestStartupGivesUp: the retries end after DATABASE_CONNECT_TIMEOUT, and an error waiting
// cannot fix (an unknown role) ends them at once.
func TestStartupGivesUp(t *testing.T) {
	t.Parallel()
	proxy, refused := dbtest.NewProxy(t, dbtest.NewURL(t))
	proxy.Refuse()
	u, err := url.Parse(dbtest.NewURL(t))
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.User("no_such_role")

	for _, tt := range []struct {
		name, url, timeout, want string
		within                   time.Duration
	}{
		{"unreachable", refused, "1s", "DATABASE_CONNECT_TIMEOUT", 5 * time.Second},
		{"unknown role", u.String(), "30s", "no_such_role", 5 * time.Second},
	} {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			r := startServe(t, map[string]string{"DATABASE_URL": tt.url, "DATABASE_CONNECT_TIMEOUT": tt.timeout}, false)
			select {
			case err := <-r.done:
				if err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Errorf("serve: %v, want an error naming %s", err, tt.want)
				}
				r.done <- err // for the cleanup
			case <-time.After(tt.within):
				t.Fatalf("serve still waiting after %s", tt.within)
			}
			if took := time.Since(start); tt.timeout == "1s" && took < 900*time.Millisecond {
				t.Errorf("gave up after %s, before DATABASE_CONNECT_TIMEOUT", took)
			}
		})
	}
}
