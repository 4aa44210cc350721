//go:build chaos

package main

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestChaosSmoke runs deploy/cluster/chaos for 30 s (one fault: an API killed and
// restarted) on ports and a database of its own, and wants every check to hold. It needs
// HAProxy, PgBouncer and Redis installed, PostgreSQL on 127.0.0.1:5432, and takes a few
// minutes, so it stays out of the default suite:
//
//	go test -tags chaos -run TestChaosSmoke -timeout 10m ./cmd/payments-chaos
func TestChaosSmoke(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "../../deploy/cluster/chaos", "30s")
	cmd.Env = append(os.Environ(), "PORT=8480", "PGBOUNCER_PORT=6832", "REDIS_PORT=6790",
		"CLUSTER_DATABASE=payments_chaos_smoke", "CONCURRENCY=4")
	// At the deadline the script gets SIGTERM, so its EXIT trap stops the cluster; SIGKILL
	// (CommandContext's default) would leave every process of it running.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 30 * time.Second
	out, err := cmd.CombinedOutput()
	t.Logf("%s", out)
	if err != nil {
		t.Fatalf("deploy/cluster/chaos 30s: %v", err)
	}
	// Exit status 0 says every check held; these say the fault and the checks ran.
	for _, want := range []string{"kill -9 api1", "INVARIANT", "each payment's history linearizable"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the output lacks %q", want)
		}
	}
}
