package main

import (
	"maps"
	"testing"

	"github.com/payments-api/payments-api/internal/testing/integration"
)

// The tests that run the binary as a separate process share internal/testing/integration's
// harness: it builds the binary once per test run, and Main removes it at the end.
func TestMain(m *testing.M) { integration.Main(m) }

const processKey = "sk_test_processes"

// startProcess runs the binary on the database at dbURL with env on top of a test
// configuration, and waits until it is ready.
func startProcess(t testing.TB, dbURL string, env map[string]string) *integration.Server {
	t.Helper()
	cfg := map[string]string{
		"DATABASE_URL": dbURL, "DEMO_API_KEYS": processKey, "LOG_LEVEL": "info",
		"JOB_TIMEOUT": "5s", "JOB_RESCUE_AFTER": "6s", "SHUTDOWN_TIMEOUT": "5s", "WEBHOOK_TIMEOUT": "500ms",
	}
	maps.Copy(cfg, env)
	return integration.Start(t, cfg)
}
