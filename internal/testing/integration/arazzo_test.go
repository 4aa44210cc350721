package integration

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestArazzoWorkflows runs every api/*.arazzo.yaml with Redocly Respect (pinned in .ci/lint)
// against the real server, started with no setting (its key is the sandbox's default),
// twice: on a fresh database, and again on the data the first run left, as the workflows
// promise to pass on either. Respect checks each step's criteria and its status, content
// type and body against api/openapi.yaml. The rate-limit workflow spends the writes quota of
// an account it makes for itself, with a quota of its own, so it needs no key and no
// setting, and leaves the key's quota to the others.
func TestArazzoWorkflows(t *testing.T) {
	t.Parallel()
	srv := startServer(t, map[string]string{"DEMO_API_KEYS": publishedDemoKey}) // the default
	files, err := filepath.Glob(filepath.Join(repoRoot, "api/*.arazzo.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no workflows in api/: %v", err)
	}
	args := []string{"respect"}
	for _, f := range files {
		rel, _ := filepath.Rel(repoRoot, f)
		args = append(args, rel)
	}
	args = append(args, "--server", "api="+srv.Base, "--input", "api_key="+publishedDemoKey)
	respect := nodeTool(t, filepath.Join(repoRoot, ".ci/lint"), "redocly")
	env := []string{"REDOCLY_TELEMETRY=off", "REDOCLY_SUPPRESS_UPDATE_NOTICE=true"}
	for _, run := range []string{"fresh database", "earlier data"} {
		out := runCommand(t, repoRoot, env, respect, args...)
		if want := "Workflows: 1 passed, 1 total"; strings.Count(out, want) != len(files) {
			t.Errorf("%s: want %q for each of %d files:\n%s", run, want, len(files), out)
		}
	}
}
