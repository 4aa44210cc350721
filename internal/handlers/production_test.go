package handlers_test

import (
	"net/http"
	"slices"
	"testing"

	"github.com/payments-api/payments-api/internal/app"
	"github.com/payments-api/payments-api/internal/contract"
	"github.com/payments-api/payments-api/internal/testing/apitest"
)

// productionServer is the server as RUN_MODE=production wires it, on a fresh database with
// the accounts of testKey and otherKey. The sandbox switches are left on, so that only the
// mode shuts the doors.
func productionServer(t *testing.T) *apitest.Client {
	t.Helper()
	return setup(t, withConfig(func(c *app.Config) { c.Sandbox = false })).client
}

// sandboxOperations lists the operations the spec marks x-sandbox-only, from the spec, so an
// operation marked later is covered without anyone adding it here.
func sandboxOperations(t *testing.T) []sharedOperation {
	t.Helper()
	var ops []sharedOperation
	for _, o := range specOperations(t) {
		if contract.SandboxOnly(o.op) {
			ops = append(ops, o)
		}
	}
	// The test helpers, /metrics and /lab at least; fewer means the marks were lost.
	if len(ops) < 6 {
		t.Fatalf("the spec marks %d operations x-sandbox-only, want the 4 test helpers, /metrics and /lab: %v", len(ops), ops)
	}
	return ops
}

// TestProductionAnswersSandboxOperationsAsUnknownPaths: in production every x-sandbox-only
// operation answers exactly what a path nobody wrote answers (404 not-found, before
// authentication), whatever the method, with or without a key; the sandbox serves them.
func TestProductionAnswersSandboxOperationsAsUnknownPaths(t *testing.T) {
	t.Parallel()
	prod := productionServer(t)
	sandbox := setup(t).client
	unknown := prod.Get("/no-such-path", apitest.NoAuth()).Problem(t)

	for _, op := range sandboxOperations(t) {
		for _, method := range []string{op.method, http.MethodOptions, http.MethodPut} {
			// The spec documents the operation's 404; on other methods the path is unknown,
			// as the production contract (without the sandbox's operations) has it.
			c := prod
			if method != op.method {
				c = prod.Production()
			}
			for _, c := range []*apitest.Client{c, c.WithKey("")} {
				res := c.Do(method, op.path, nil)
				if res.Status != http.StatusNotFound {
					t.Errorf("production %s %s (key %q): %d, want 404", method, op.path, c.APIKey, res.Status)
					continue
				}
				if method != http.MethodHead { // net/http sends no body in answer to HEAD
					if p := res.Problem(t); p.Type != unknown.Type || p.Status != unknown.Status || p.Detail != unknown.Detail {
						t.Errorf("production %s %s: %+v, want what an unknown path gets: %+v", method, op.path, p, unknown)
					}
				}
				if allow := res.Header.Get("Allow"); allow != "" {
					t.Errorf("production %s %s: Allow %q tells the path exists", method, op.path, allow)
				}
			}
		}
		if res := sandbox.Do(op.method, op.path, nil); res.Status >= 300 {
			t.Errorf("sandbox %s %s: %d, want it served", op.method, op.path, res.Status)
		}
	}
}

// TestProductionAppliesNoFault: Prefer's faults and latency are sandbox doors; production
// ignores them (RFC 7240 lets a server ignore any preference) and says it applied none.
func TestProductionAppliesNoFault(t *testing.T) {
	t.Parallel()
	prod := productionServer(t)
	for _, prefer := range []string{"fault=error-before", "fault=rate-limited", "fault=lost-response", "latency=5s"} {
		res := prod.Post("/payments", visa(100), apitest.Header("Idempotency-Key", newKey()), apitest.Header("Prefer", prefer))
		if res.Status != http.StatusCreated {
			t.Errorf("Prefer: %s: %d, want 201 as without it", prefer, res.Status)
		}
		if applied := res.Header.Values("Preference-Applied"); len(applied) > 0 {
			t.Errorf("Prefer: %s: Preference-Applied %q", prefer, applied)
		}
	}
	// The same preference in the sandbox, to show the test would see a fault applied.
	res := setup(t).client.Post("/payments", visa(100), apitest.Header("Idempotency-Key", newKey()), apitest.Header("Prefer", "fault=error-before"))
	if res.Status != http.StatusServiceUnavailable || !slices.Contains(res.Header.Values("Preference-Applied"), "fault=error-before") {
		t.Errorf("sandbox, Prefer: fault=error-before: %d %q, want the 503 applied", res.Status, res.Header.Values("Preference-Applied"))
	}
}
