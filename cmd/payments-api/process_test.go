package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	osexec "os/exec" // exec is the migrate tests' SQL helper
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/payments-api/payments-api/internal/testing/apitest"
)

// These tests run the real binary as separate processes, which is what a crash or a second
// server is: built once per test run, started against a fresh database, killed with SIGKILL.

var (
	binaryOnce sync.Once
	binaryPath string
	binaryErr  error
	binaryDir  string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binaryDir != "" {
		_ = os.RemoveAll(binaryDir)
	}
	os.Exit(code)
}

// buildBinary compiles payments-api once for all the tests that run it.
func buildBinary(t testing.TB) string {
	t.Helper()
	binaryOnce.Do(func() {
		binaryDir, binaryErr = os.MkdirTemp("", "payments-api-bin")
		if binaryErr != nil {
			return
		}
		binaryPath = filepath.Join(binaryDir, "payments-api")
		out, err := osexec.CommandContext(context.Background(), "go", "build", "-o", binaryPath, ".").CombinedOutput()
		if err != nil {
			binaryErr = fmt.Errorf("go build: %w\n%s", err, out)
		}
	})
	if binaryErr != nil {
		t.Fatal(binaryErr)
	}
	return binaryPath
}

// process is one running payments-api.
type process struct {
	cmd  *osexec.Cmd
	base string      // http://127.0.0.1:port, empty for a worker
	logs *syncBuffer // written by exec's copying goroutines
}

const processKey = "sk_test_processes"

// startProcess runs the binary with env on top of a test configuration, and waits until it
// is ready (its HTTP server answers, or, for a worker, it logged that it runs jobs).
func startProcess(t testing.TB, dbURL string, env map[string]string) *process {
	t.Helper()
	var lc net.ListenConfig
	ln, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cfg := map[string]string{
		"DATABASE_URL": dbURL, "LISTEN_ADDR": addr, "DEMO_API_KEYS": processKey, "LOG_LEVEL": "info",
		"JOB_TIMEOUT": "5s", "JOB_RESCUE_AFTER": "6s", "SHUTDOWN_TIMEOUT": "5s", "WEBHOOK_TIMEOUT": "500ms",
	}
	for k, v := range env {
		cfg[k] = v
	}
	// Not the test's context: the tests kill the process themselves, when they choose to.
	p := &process{cmd: osexec.CommandContext(context.Background(), buildBinary(t)), logs: &syncBuffer{}}
	p.cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	for k, v := range cfg {
		p.cmd.Env = append(p.cmd.Env, k+"="+v)
	}
	p.cmd.Stdout, p.cmd.Stderr = p.logs, p.logs
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			_ = p.cmd.Process.Kill()
			_ = p.cmd.Wait()
		}
		if t.Failed() {
			t.Logf("logs of process %d:\n%s", p.cmd.Process.Pid, p.logs)
		}
	})
	if cfg["PROCESS_ROLE"] != roleWorker {
		p.base = "http://" + addr
	}
	waitFor(t, func() bool {
		if p.base == "" {
			return strings.Contains(p.logs.String(), "running jobs only")
		}
		status, err := get(context.Background(), p.base+"/readyz")
		return err == nil && status == http.StatusOK
	})
	return p
}

// wait waits for the process to exit, and kills it if it still runs after within: a shutdown
// that hangs fails its test ("signal: killed") instead of hanging the package.
func (p *process) wait(within time.Duration) error {
	killer := time.AfterFunc(within, func() { _ = p.cmd.Process.Kill() })
	defer killer.Stop()
	return p.cmd.Wait()
}

// kill sends SIGKILL: no shutdown, no cleanup, exactly what a crash is.
func (p *process) kill(t testing.TB) {
	t.Helper()
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = p.cmd.Wait()
}

// seedPayments inserts n payments of the process key's account, created a minute ago.
func seedPayments(t testing.TB, pool *pgxpool.Pool, n int) {
	t.Helper()
	_, err := pool.Exec(context.Background(), `
		INSERT INTO payments (id, account_id, amount, currency, status, payment_method, created_at, updated_at)
		SELECT 'pay_seed' || g, k.account_id, g, 'usd', 'succeeded', 'pm_card_visa',
		       now() - interval '1 minute', now() - interval '1 minute'
		FROM generate_series(1, $2) g, api_keys k
		WHERE k.key_hash = sha256($1::text::bytea)`, processKey, n)
	if err != nil {
		t.Fatal(err)
	}
}

func reportRequest() map[string]any {
	now := time.Now().UTC()
	return map[string]any{"type": "payments", "format": "csv",
		"created_gte": now.Add(-time.Hour).Format(time.RFC3339), "created_lt": now.Add(time.Hour).Format(time.RFC3339)}
}

// requestReport posts a report and returns its job id.
func requestReport(t testing.TB, c *apitest.Client) string {
	t.Helper()
	res := c.Post("/reports", reportRequest(), apitest.Header("Idempotency-Key", fmt.Sprintf("report-%d", time.Now().UnixNano())))
	if res.Status != http.StatusAccepted {
		t.Fatalf("POST /reports: %d %s", res.Status, res.Body)
	}
	var j struct{ ID string }
	res.Decode(t, &j)
	return j.ID
}

// waitForStatus polls the job until it has status, for up to timeout.
func waitForStatus(t testing.TB, c *apitest.Client, id, status string, timeout time.Duration) {
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

func newPool(t testing.TB, url string) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

func count(t testing.TB, pool *pgxpool.Pool, query string, args ...any) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), query, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}
