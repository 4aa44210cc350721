package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestArazzoWorkflows runs every api/*.arazzo.yaml with Redocly Respect (pinned in .ci/lint)
// against the real server, twice: on a fresh database, and again on the data the first run
// left, as the workflows promise to pass on either. Respect checks each step's criteria and
// its status, content type and body against api/openapi.yaml. The rate-limit workflow spends
// an account's whole writes quota, so it runs with a key of its own.
func TestArazzoWorkflows(t *testing.T) {
	const key, limitsKey = "sk_test_arazzo", "sk_test_arazzo_limits"
	srv := startServe(t, map[string]string{"DEMO_API_KEYS": key + "," + limitsKey}, true)
	files, err := filepath.Glob(filepath.Join(repoRoot, "api/*.arazzo.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no workflows in api/: %v", err)
	}
	var shared []string
	for _, f := range files {
		rel, _ := filepath.Rel(repoRoot, f)
		if filepath.Base(f) != "rate-limits.arazzo.yaml" {
			shared = append(shared, rel)
		}
	}
	respect := nodeTool(t, filepath.Join(repoRoot, ".ci/lint"), "redocly")
	env := []string{"REDOCLY_TELEMETRY=off", "REDOCLY_SUPPRESS_UPDATE_NOTICE=true"}
	for _, run := range []string{"fresh database", "earlier data"} {
		for _, set := range []struct {
			files []string
			key   string
		}{{shared, key}, {[]string{"api/rate-limits.arazzo.yaml"}, limitsKey}} {
			args := append([]string{"respect"}, set.files...)
			args = append(args, "--server", "api="+srv.base, "--input", "api_key="+set.key)
			out := runCommand(t, repoRoot, env, respect, args...)
			if want := "Workflows: 1 passed, 1 total"; strings.Count(out, want) != len(set.files) {
				t.Errorf("%s: %v: want %q for each file:\n%s", run, set.files, want, out)
			}
		}
	}
}
