package integration

import (
	"context"
	"net"
	"net/http"
	"os"
	osexec "os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/payments-api/payments-api/internal/testing/apitest"
)

// TestPerAddressLimitsBehindHAProxy runs the server behind HAProxy with the cluster's own
// configuration (deploy/cluster/haproxy.cfg). Every request then reaches the server from
// HAProxy's 127.0.0.1, yet two clients on other loopback addresses have a
// failed-authentication budget each: one floods wrong keys until it is refused, and the
// other is still served. Without the X-Forwarded-For that HAProxy sets, or without
// TRUSTED_PROXIES, the second client would be refused too. The server trusts HAProxy's
// address alone, as deploy/cluster/run starts the APIs, or a whole network that holds the
// clients too, as docker-compose.yml trusts the private networks: there only HAProxy
// replacing the header, not appending to it, keeps a client from naming another.
func TestPerAddressLimitsBehindHAProxy(t *testing.T) {
	t.Parallel()
	for _, trusted := range []string{"127.0.0.1", "127.0.0.0/8"} {
		t.Run(trusted, func(t *testing.T) {
			t.Parallel()
			r := startServer(t, map[string]string{"TRUSTED_PROXIES": trusted, "RATE_LIMIT_UNAUTHENTICATED": "3/1m"})
			base := startHAProxy(t, r.Addr)
			flooder := apitest.NewClient(t, base, testKey).From("127.0.0.2")
			other := apitest.NewClient(t, base, testKey).From("127.0.0.3")
			wrong := apitest.Header("Authorization", "Bearer sk_test_guess")

			for i := range 3 {
				if res := flooder.Get("/account", wrong); res.Status != http.StatusUnauthorized {
					t.Fatalf("the flooder's failure %d: %d, want 401", i+1, res.Status)
				}
			}
			if res := flooder.Get("/account", wrong); res.Status != http.StatusTooManyRequests {
				t.Fatalf("the flooder's fourth failure: %d, want 429", res.Status)
			}
			if res := flooder.Get("/account", wrong, apitest.Header("X-Forwarded-For", "127.0.0.3")); res.Status != http.StatusTooManyRequests {
				t.Errorf("the flooder naming the other client: %d, want 429", res.Status)
			}
			if res := other.Get("/account", wrong); res.Status != http.StatusUnauthorized {
				t.Errorf("the other client's wrong key: %d, want 401", res.Status)
			}
			if res := other.Get("/account"); res.Status != http.StatusOK {
				t.Errorf("the other client's own key: %d, want 200", res.Status)
			}
		})
	}
}

// startHAProxy runs HAProxy with deploy/cluster/haproxy.cfg in front of the one API at
// apiAddr (the other server lines dropped, as deploy/cluster/lib.sh drops them when
// API_PROCESSES=1) and returns its base URL once it passes a request through.
func startHAProxy(t *testing.T, apiAddr string) string {
	t.Helper()
	bin := systemTool(t, "haproxy")
	cfg, err := os.ReadFile(filepath.Join(repoRoot, "deploy/cluster/haproxy.cfg"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	page, err := os.ReadFile(filepath.Join(repoRoot, "deploy/cluster/unavailable.http"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "unavailable.http"), page, 0o600); err != nil {
		t.Fatal(err)
	}
	_, apiPort, _ := net.SplitHostPort(apiAddr)
	port := FreePort(t)
	text := regexp.MustCompile(`(?m)^ *server api[23] .*\n`).ReplaceAllString(string(cfg), "")
	text = strings.NewReplacer("${LISTEN_HOST}", "127.0.0.1", "${PORT}", port, "${API1_PORT}", apiPort,
		"${CONFIG_DIR}", dir, "${HTTP_REUSE}", "safe").Replace(text)
	if regexp.MustCompile(`\$\{[A-Z0-9_]+\}`).MatchString(text) {
		t.Fatalf("haproxy.cfg names a setting this test does not fill in:\n%s", text)
	}
	path := filepath.Join(dir, "haproxy.cfg")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := osexec.CommandContext(context.Background(), bin, "-db", "-f", path) // stopped by the cleanup below
	var out SyncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("haproxy:\n%s", out.String())
		}
	})
	base := "http://127.0.0.1:" + port
	WaitFor(t, func() bool { // HAProxy is listening and passes requests to the API
		status, err := Get(context.Background(), base+"/healthz")
		return err == nil && status == http.StatusOK
	})
	return base
}
