package integration

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/payments-api/payments-api/internal/testing/apitest"
)

// RequestReport posts a CSV report of the payments of the last hour and returns its job id.
func RequestReport(t testing.TB, c *apitest.Client) string {
	t.Helper()
	now := time.Now().UTC()
	body := map[string]any{"type": "payments", "format": "csv",
		"created_gte": now.Add(-time.Hour).Format(time.RFC3339), "created_lt": now.Add(time.Hour).Format(time.RFC3339)}
	res := c.Post("/reports", body, apitest.Header("Idempotency-Key", fmt.Sprintf("report-%d", time.Now().UnixNano())))
	if res.Status != http.StatusAccepted {
		t.Fatalf("POST /reports: %d %s", res.Status, res.Body)
	}
	var j struct{ ID string }
	res.Decode(t, &j)
	return j.ID
}

// WaitForJob polls the job until it has status, for up to timeout.
func WaitForJob(t testing.TB, c *apitest.Client, id, status string, timeout time.Duration) {
	t.Helper()
	var j struct{ Status string }
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		c.Get("/jobs/"+id).Decode(t, &j)
		if j.Status == status {
			return
		}
	}
	t.Fatalf("job %s is %q after %s, want %s", id, j.Status, timeout, status)
}
