package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	osexec "os/exec"
	"strings"
	"testing"
	"time"

	"github.com/payments-api/payments-api/internal/testing/apitest"
	"github.com/payments-api/payments-api/internal/testing/dbtest"
	"github.com/payments-api/payments-api/internal/testing/integration"
)

const operatorKey = "sk_live_operator_key_1"

// TestProductionShutsTheSandboxDoors runs a database as a sandbox first (the published demo
// key seeded, a throwaway account made), then serves it with RUN_MODE=production: only the
// key DEMO_API_KEYS names opens it, the test helpers, the race lab and /metrics are unknown
// paths on the API's address, and the metrics are served on METRICS_ADDR instead.
func TestProductionShutsTheSandboxDoors(t *testing.T) {
	t.Parallel()
	dbURL := dbtest.NewURL(t)

	sandbox := startServe(t, map[string]string{"DATABASE_URL": dbURL, "DEMO_API_KEYS": publishedDemoKey}, true)
	var throwaway struct {
		APIKey string `json:"api_key"`
	}
	res := apitest.NewClient(t, sandbox.base, "").Post("/test/accounts", nil)
	if res.Status != http.StatusCreated {
		t.Fatalf("sandbox POST /test/accounts: %d", res.Status)
	}
	res.Decode(t, &throwaway)
	if res := apitest.NewClient(t, sandbox.base, "").Get("/lab"); res.Status != http.StatusOK {
		t.Errorf("sandbox GET /lab: %d, want the race lab", res.Status)
	}
	if !sandbox.logged(`"msg":"serving"`, `"mode":"sandbox"`) {
		t.Error(`the sandbox's start-up line does not name its mode`)
	}
	sandbox.stop()
	if err := <-sandbox.done; err != nil {
		t.Fatal(err)
	}
	sandbox.done <- nil // for its cleanup

	metricsAddr := "127.0.0.1:" + integration.FreePort(t)
	prod := startServe(t, map[string]string{
		"DATABASE_URL": dbURL, "RUN_MODE": "production", "DEMO_API_KEYS": operatorKey, "METRICS_ADDR": metricsAddr,
	}, true)
	if !prod.logged(`"msg":"serving"`, `"mode":"production"`) {
		t.Error(`the production start-up line does not name its mode`)
	}
	api := apitest.NewClient(t, prod.base, operatorKey)
	for key, want := range map[string]int{operatorKey: http.StatusOK, publishedDemoKey: http.StatusUnauthorized, throwaway.APIKey: http.StatusUnauthorized} {
		if res := api.WithKey(key).Get("/account"); res.Status != want {
			t.Errorf("GET /account with %.12s…: %d, want %d", key, res.Status, want)
		}
	}
	if res := api.Post("/test/accounts", nil, apitest.NoAuth()); res.Status != http.StatusNotFound {
		t.Errorf("production POST /test/accounts: %d, want 404", res.Status)
	}
	if res := api.Production().Get("/lab", apitest.NoAuth()); res.Status != http.StatusNotFound {
		t.Errorf("production GET /lab: %d, want 404", res.Status)
	}
	if res := api.Get("/metrics"); res.Status != http.StatusNotFound {
		t.Errorf("production GET /metrics on the API's address: %d, want 404", res.Status)
	}
	// Not checked against the spec: METRICS_ADDR is the operator's listener, not the API's,
	// and answers without the API's headers (Request-Id, Server-Timing).
	status, body := getBody(t, "http://"+metricsAddr+"/metrics")
	if status != http.StatusOK || !strings.Contains(body, "http_request_duration_seconds") {
		t.Errorf("GET /metrics on METRICS_ADDR: %d, want 200 with the request series; %.200s", status, body)
	}
}

// TestEmptyDemoKeysMeansNoKey: DEMO_API_KEYS set to nothing seeds no key, in the sandbox too
// (the variable's default applies only when it is not set at all).
func TestEmptyDemoKeysMeansNoKey(t *testing.T) {
	t.Parallel()
	r := startServe(t, map[string]string{"DEMO_API_KEYS": ""}, true)
	if res := apitest.NewClient(t, r.base, publishedDemoKey).Get("/account"); res.Status != http.StatusUnauthorized {
		t.Errorf("GET /account with the published key: %d, want 401", res.Status)
	}
	if !r.logged(`"msg":"serving"`, `"demo_keys":0`) {
		t.Error(`the start-up line does not say "demo_keys":0`)
	}
}

// TestProductionRefusesPrivateWebhookNetworks: the binary stops at once, naming the variable,
// before it touches the database (which here would only be retried for 30 s).
func TestProductionRefusesPrivateWebhookNetworks(t *testing.T) {
	t.Parallel()
	bin := integration.Binary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := osexec.CommandContext(ctx, bin)
	cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"), "RUN_MODE=production", "WEBHOOK_ALLOW_PRIVATE_NETWORKS=true",
		"DATABASE_URL=postgres://postgres@127.0.0.1:1/none", "DATABASE_CONNECT_TIMEOUT=30s", "LISTEN_ADDR=127.0.0.1:0",
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	var exit *osexec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() == 0 {
		t.Fatalf("payments-api: %v, want a non-zero exit; output: %s", err, out.String())
	}
	if !strings.Contains(out.String(), "WEBHOOK_ALLOW_PRIVATE_NETWORKS") {
		t.Errorf("the refusal does not name the variable: %s", out.String())
	}
	t.Logf("refused in %s", time.Since(start).Round(time.Millisecond))
}

// TestSandboxBeyondLoopbackWarns: a sandbox reachable from other machines says so at start-up.
func TestSandboxBeyondLoopbackWarns(t *testing.T) {
	for _, tt := range []struct {
		mode runMode
		ip   net.IP
		warn bool
	}{
		{modeSandbox, net.IPv4zero, true},
		{modeSandbox, net.ParseIP("192.0.2.10"), true},
		{modeSandbox, net.IPv4(127, 0, 0, 1), false},
		{modeSandbox, net.IPv6loopback, false},
		{modeProduction, net.IPv4zero, false},
	} {
		var logs bytes.Buffer
		warnOfOpenDoors(config{RunMode: tt.mode}, &net.TCPAddr{IP: tt.ip, Port: 8080}, newLogger(&logs, slog.LevelInfo))
		if warned := strings.Contains(logs.String(), "RUN_MODE=sandbox is listening beyond loopback"); warned != tt.warn {
			t.Errorf("%s on %s: warned %v, want %v; logs: %s", tt.mode, tt.ip, warned, tt.warn, logs.String())
		}
	}
}

func getBody(t *testing.T, url string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := httpClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, string(body)
}
