package integration

import (
	"maps"
	"testing"

	"github.com/payments-api/payments-api/internal/testing/apitest"
)

func TestMain(m *testing.M) { Main(m) }

// repoRoot is the repository's root, from this package's directory (where go test runs).
const repoRoot = "../../.."

// testKey is the demo key the tests' servers are seeded with.
const testKey = "sk_test_integration"

// publishedDemoKey is the key a server started with no setting seeds (DEMO_API_KEYS'
// default in cmd/payments-api), the one README.md and the spec's examples print.
const publishedDemoKey = "sk_test_demo"

// The values of PROCESS_ROLE.
const (
	roleAll    = "all"    // serve HTTP and run jobs
	roleAPI    = "api"    // serve HTTP; jobs are only enqueued and canceled
	roleWorker = "worker" // run jobs; no HTTP listener
)

// startServer runs payments-api with env on top of the tests' defaults: a fresh database,
// testKey, and every log line down to debug. It is stopped when t ends.
func startServer(t *testing.T, env map[string]string) *Server {
	t.Helper()
	env = maps.Clone(env)
	if env == nil {
		env = map[string]string{}
	}
	if _, set := env["DEMO_API_KEYS"]; !set {
		env["DEMO_API_KEYS"] = testKey
	}
	if env["LOG_LEVEL"] == "" {
		env["LOG_LEVEL"] = "debug"
	}
	return Start(t, env)
}

// startProcess runs payments-api on the database at dbURL with env on top of settings for
// the tests that kill or restart processes: short job, rescue and shutdown timeouts, so a
// killed worker's job is picked up again within seconds.
func startProcess(t *testing.T, dbURL string, env map[string]string) *Server {
	t.Helper()
	cfg := map[string]string{
		"DATABASE_URL": dbURL, "DEMO_API_KEYS": testKey, "LOG_LEVEL": "info",
		"JOB_TIMEOUT": "5s", "JOB_RESCUE_AFTER": "6s", "SHUTDOWN_TIMEOUT": "5s", "WEBHOOK_TIMEOUT": "500ms",
	}
	maps.Copy(cfg, env)
	return Start(t, cfg)
}

// send makes one request with testKey (and an Idempotency-Key when key is set), through a
// client with a timeout of its own, for the tests that time the answer.
func send(t *testing.T, s *Server, method, path, body, key string) *apitest.Response {
	t.Helper()
	var opts []apitest.Option
	if key != "" {
		opts = append(opts, apitest.Header("Idempotency-Key", key))
	}
	var b any // nil: no body
	if body != "" {
		b = body
	}
	return apitest.NewClient(t, s.Base, testKey).Do(method, path, b, opts...)
}
