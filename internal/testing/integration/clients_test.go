package integration

import (
	"context"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestClientStories runs the story example of each generated client (clients/go and
// clients/typescript) against the real server, through the Prism validation proxy: a
// client, the server and the spec that disagree fail the example (its own checks) or Prism
// (every request and response checked against api/openapi.yaml; --errors turns a violation
// into an error answer, and its log is read for any). The one request whose answer the server
// drops on purpose (Prefer: fault=lost-response) goes to the server directly: Prism would
// answer the closed connection itself, with a 500 the client would see instead of the loss.
// The stories make their own accounts and need no setting but the one that lets the server
// deliver webhooks to them, on this machine; TestClientStoriesWithoutSettings runs them
// without it.
func TestClientStories(t *testing.T) {
	t.Parallel()
	srv := startServer(t, map[string]string{"WEBHOOK_ALLOW_PRIVATE_NETWORKS": "true"})
	prism := startPrism(t, srv.Base)
	runStories(t, prism.base, srv.Base, "webhook payment.succeeded for pay_")
	t.Cleanup(func() { prism.checkClean(t) })
}

// TestClientStoriesWithoutSettings runs both stories against a server started as the README
// starts it, with no setting at all: each passes, meeting its 429 in an account with a
// writes quota of its own, and skips the webhook it cannot receive. (Prism is left to
// TestClientStories, which sends the same requests and more.)
func TestClientStoriesWithoutSettings(t *testing.T) {
	t.Parallel()
	srv := startServer(t, map[string]string{"DEMO_API_KEYS": publishedDemoKey}) // the default
	runStories(t, srv.Base, srv.Base, "webhook: skipped")
}

// TestTypeScriptClientUnits runs the TypeScript client's own tests (clients/typescript/test),
// which need no server. The files are named, not their folder: Node.js 21 and later read a
// folder given to --test as a file.
func TestTypeScriptClientUnits(t *testing.T) {
	t.Parallel()
	tsDir := compileTypeScript(t)
	tests, err := filepath.Glob(filepath.Join(tsDir, "dist/test/*.test.js"))
	if err != nil || len(tests) == 0 {
		t.Fatalf("no compiled tests in %s/dist/test (%v)", tsDir, err)
	}
	args := []string{"--test"}
	for _, test := range tests {
		args = append(args, strings.TrimPrefix(test, tsDir+string(filepath.Separator)))
	}
	t.Log(runCommand(t, tsDir, nil, "node", args...))
}

// typeScript compiles the TypeScript client, its story and its tests once for the tests that
// run them, which run in parallel: two compilers would write the same dist/ at once.
var typeScript struct {
	once     sync.Once
	compiled bool
}

// compileTypeScript compiles clients/typescript once (typeScript) and returns its folder.
func compileTypeScript(t *testing.T) string {
	t.Helper()
	tsDir := filepath.Join(repoRoot, "clients/typescript")
	typeScript.once.Do(func() {
		runCommand(t, tsDir, nil, nodeTool(t, tsDir, "tsc"), "-p", ".")
		typeScript.compiled = true
	})
	if !typeScript.compiled {
		t.Fatal("the TypeScript client did not compile (the test that compiled it says why)")
	}
	return tsDir
}

// runStories builds the Go and TypeScript stories and runs them side by side against baseURL
// (and directURL, the server behind it), each checked by checkStory with the webhook line
// it must print.
func runStories(t *testing.T, baseURL, directURL, webhook string) {
	t.Helper()
	story := filepath.Join(t.TempDir(), "story")
	runCommand(t, repoRoot, nil, "go", "-C", "clients/go", "build", "-o", story, "./examples/story")
	tsDir := compileTypeScript(t)
	env := []string{"PAYMENTS_API_URL=" + baseURL, "PAYMENTS_API_DIRECT_URL=" + directURL}
	t.Run("go", func(t *testing.T) {
		t.Parallel()
		checkStory(t, runCommand(t, repoRoot, env, story), webhook)
	})
	t.Run("typescript", func(t *testing.T) {
		t.Parallel()
		checkStory(t, runCommand(t, tsDir, env, "node", "dist/examples/story.js"), webhook)
	})
}

// checkStory asserts the example reached its end, and lost an answer, met a 429 and deleted
// its accounts on the way.
func checkStory(t *testing.T, out, webhook string) {
	t.Helper()
	t.Log(out)
	for _, want := range []string{"create payment: no answer", "replayed once; /problems/idempotency-key-reused", "report rpt_", webhook,
		"writes 2 per 6 s", "429: retrying after", "throwaway accounts deleted", "story: every answer was the contract's"} {
		if !strings.Contains(out, want) {
			t.Errorf("story output lacks %q:\n%s", want, out)
		}
	}
}

// prismProxy is Prism's validation proxy in front of a server.
type prismProxy struct {
	base string
	logs *SyncBuffer
	stop context.CancelFunc
	done chan error
}

// startPrism starts `prism proxy` (pinned in .ci/lint) in front of upstream and waits until
// it forwards requests. It is stopped when t ends.
func startPrism(t *testing.T, upstream string) *prismProxy {
	t.Helper()
	bin := nodeTool(t, filepath.Join(repoRoot, ".ci/lint"), "prism")
	port := FreePort(t)
	ctx, stop := context.WithCancel(context.Background())
	cmd := osexec.CommandContext(ctx, bin, "proxy", filepath.Join(repoRoot, "api/openapi.yaml"), upstream,
		"--host", "127.0.0.1", "--port", port, "--errors")
	p := &prismProxy{base: "http://127.0.0.1:" + port, logs: &SyncBuffer{}, stop: stop, done: make(chan error, 1)}
	cmd.Stdout, cmd.Stderr = p.logs, p.logs
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatalf("start prism: %v", err)
	}
	go func() { p.done <- cmd.Wait() }()
	t.Cleanup(func() {
		stop()
		if err := <-p.done; err != nil {
			t.Logf("prism stopped: %v", err) // killed by stop, as it should be
		}
	})
	for deadline := time.Now().Add(90 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if status, err := Get(context.Background(), p.base+"/healthz"); err == nil && status == 200 {
			return p
		}
		select {
		case err := <-p.done:
			t.Fatalf("prism exited: %v\n%s", err, p.logs)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("prism did not answer within 90s:\n%s", p.logs)
		}
	}
}

// checkClean fails t if Prism reported any violation, or forwarded nothing.
func (p *prismProxy) checkClean(t *testing.T) {
	t.Helper()
	logs := p.logs.String()
	if strings.Count(logs, "Received forward response") < 10 {
		t.Errorf("prism forwarded too few responses to have seen the stories:\n%s", logs)
	}
	for _, line := range strings.Split(logs, "\n") {
		if strings.Contains(line, "Violation") || strings.Contains(line, "✖") {
			t.Errorf("prism: %s", line)
		}
	}
}

// runCommand runs a command in dir with extra environment and a deadline, and returns its output,
// failing t if it fails.
func runCommand(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cmd := osexec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// nodeTool is the path of an npm-installed command, failing t if dir's packages are not
// installed (scripts/test installs them).
func nodeTool(t *testing.T, dir, name string) string {
	t.Helper()
	bin, err := filepath.Abs(filepath.Join(dir, "node_modules/.bin", name))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%s is not installed: run npm ci in %s (scripts/test does): %v", name, dir, err)
	}
	return bin
}
