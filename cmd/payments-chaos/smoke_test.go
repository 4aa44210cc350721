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

// These smokes run the chaos scripts for a short while and want every check to hold. They
// start whole clusters and take minutes, so they stay out of the default suite:
//
//	go test -tags chaos -run TestChaosSmoke -timeout 10m ./cmd/payments-chaos
//	sudo go test -tags chaos -run TestFailoverSmoke -timeout 10m ./cmd/payments-chaos

// TestChaosSmoke runs deploy/cluster/chaos for 30 s (one fault: an API killed and
// restarted) on ports and a database of its own. It needs HAProxy, PgBouncer and Redis
// installed and PostgreSQL on 127.0.0.1:5432.
func TestChaosSmoke(t *testing.T) {
	out := runChaos(t, []string{"PORT=8480", "PGBOUNCER_PORT=6832", "REDIS_PORT=6790",
		"CLUSTER_DATABASE=payments_chaos_smoke", "CONCURRENCY=4"}, "../../deploy/cluster/chaos", "30s")
	for _, want := range []string{"kill -9 api1", "INVARIANT", "each payment's history linearizable"} {
		if !strings.Contains(out, want) {
			t.Errorf("the output lacks %q", want)
		}
	}
}

// TestFailoverSmoke runs deploy/ha/chaos for 30 s with one fault: the primary's postmaster
// killed under load. Every payment, refund and key answered 201 must be found on the
// promoted standby. It needs root (it creates network namespaces) and installs etcd,
// Patroni, HAProxy and PgBouncer with apt-get when they are missing.
func TestFailoverSmoke(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("deploy/ha/chaos creates network namespaces: run this test as root")
	}
	out := runChaos(t, []string{"HA_FAULTS=kill-primary", "CONCURRENCY=4"}, "../../deploy/ha/chaos", "30s")
	// Exit status 0 says every check held; these say the failover happened and was checked.
	for _, want := range []string{"kill -9 the primary's postmaster", "every acknowledged write exists",
		"one promotion per lost primary", "1 → 2"} {
		if !strings.Contains(out, want) {
			t.Errorf("the output lacks %q", want)
		}
	}
}

// runChaos runs a chaos script with env added, wants it to exit 0, and returns its output.
func runChaos(t *testing.T, env []string, script string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, script, args...)
	cmd.Env = append(os.Environ(), env...)
	// At the deadline the script gets SIGTERM, so its EXIT trap stops the cluster; SIGKILL
	// (CommandContext's default) would leave every process of it running.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 30 * time.Second
	out, err := cmd.CombinedOutput()
	t.Logf("%s", out)
	if err != nil {
		t.Fatalf("%s %s: %v", script, strings.Join(args, " "), err)
	}
	return string(out)
}
