package integration

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// The documentation's examples are run, so they cannot drift from the server. In README.md and
// docs/*.md, a ```sh block that calls curl is followed by a comment with the statuses its
// requests answer, in any order:
//
//	<!-- expect: 201 -->
//	<!-- expect: 200 until "status":"succeeded" -->   (run again until the output has it)
//	<!-- expect: 000 -->                               (no answer: the connection closed)
//
// 000 is curl's status for a request that got no answer; curl then exits 52 (empty reply), which
// ends the example's script, so a 000 is expected of an example's last request only.
// A file may configure its server with `<!-- docs-test: env NAME=value ... -->`. The examples
// of a file run in order against a fresh server on a fresh database, with the API key
// sk_test_demo; localhost:8080 is replaced by the server's address, and a placeholder such
// as pay_... by the first id of that kind in the latest output that had one.

var (
	expectComment = regexp.MustCompile(`^<!-- expect: ((?:\d{3} ?)+)(?:until (.+) )?-->$`)
	envComment    = regexp.MustCompile(`<!-- docs-test: env ((?:[A-Z_]+=\S+ ?)+)-->`)
	placeholder   = regexp.MustCompile(`\b(pay|re|job|rpt|evt|we|msg)_\.\.\.`)
	resourceID    = regexp.MustCompile(`\b(pay|re|job|rpt|evt|we|msg)_[A-Z2-7]{26}\b`)
	statusLine    = regexp.MustCompile(`<<status (\d{3})>>`)
	// A link to code: [`Store.Do`](../internal/idempotency/store.go).
	codeLink = regexp.MustCompile("\\[`(?:\\(?\\*?([A-Za-z]+)\\)?\\.)?([A-Za-z]+)`\\]\\(((?:\\.\\./)?[a-z][^)#]*\\.go)\\)")
)

// docExample is one ```sh block and what it must answer.
type docExample struct {
	line   int
	script string
	want   []string // statuses
	until  string
}

func TestDocumentationExamples(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join(repoRoot, "docs/*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, filepath.Join(repoRoot, "README.md"))
	for _, file := range files {
		name, _ := filepath.Rel(repoRoot, file)
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			text, examples := readExamples(t, file)
			if len(examples) == 0 {
				return
			}
			env := map[string]string{"DEMO_API_KEYS": "sk_test_demo"}
			if m := envComment.FindStringSubmatch(text); m != nil {
				for kv := range strings.FieldsSeq(m[1]) {
					k, v, _ := strings.Cut(kv, "=")
					env[k] = v
				}
			}
			srv := startServer(t, env)
			runExamples(t, name, srv.Addr, examples)
		})
	}
}

// readExamples parses file, failing t on a curl block without an expected status.
func readExamples(t *testing.T, file string) (string, []docExample) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var examples []docExample
	lines := strings.Split(string(data), "\n")
	for i := 0; i < len(lines); i++ {
		if strings.TrimSpace(lines[i]) != "```sh" {
			continue
		}
		start, end := i+1, i+1
		for end < len(lines) && strings.TrimSpace(lines[end]) != "```" {
			end++
		}
		script := strings.Join(lines[start:end], "\n")
		i = end
		next := end + 1
		for next < len(lines) && strings.TrimSpace(lines[next]) == "" {
			next++
		}
		m := (*[]string)(nil)
		if next < len(lines) {
			if sm := expectComment.FindStringSubmatch(strings.TrimSpace(lines[next])); sm != nil {
				m = &sm
			}
		}
		switch {
		case m != nil:
			examples = append(examples, docExample{line: start, script: script, want: strings.Fields((*m)[1]), until: strings.TrimSpace((*m)[2])})
		case strings.Contains(script, "curl "):
			t.Errorf("%s:%d: a curl example needs <!-- expect: STATUS --> after it, so that it is run", file, start)
		}
	}
	return string(data), examples
}

// runExamples runs each example in order against the server at addr.
func runExamples(t *testing.T, file, addr string, examples []docExample) {
	curlHome := t.TempDir()
	if err := os.WriteFile(filepath.Join(curlHome, ".curlrc"), []byte("write-out = \"\\n<<status %{http_code}>>\\n\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ids := map[string]string{}
	for _, ex := range examples {
		var missing []string
		script := placeholder.ReplaceAllStringFunc(ex.script, func(p string) string {
			id, ok := ids[strings.TrimSuffix(p, "_...")]
			if !ok {
				missing = append(missing, p)
			}
			return id
		})
		if missing != nil {
			t.Fatalf("%s:%d: no earlier example answered an id for %v", file, ex.line, missing)
		}
		script = strings.ReplaceAll(script, "localhost:8080", addr)
		noAnswer := slices.Contains(ex.want, "000")
		out := runScript(t, curlHome, script, noAnswer)
		for deadline := time.Now().Add(20 * time.Second); ex.until != "" && !strings.Contains(out, ex.until) && time.Now().Before(deadline); {
			time.Sleep(500 * time.Millisecond)
			out = runScript(t, curlHome, script, noAnswer)
		}
		var got []string
		for _, m := range statusLine.FindAllStringSubmatch(out, -1) {
			got = append(got, m[1])
		}
		slices.Sort(got)
		want := slices.Sorted(slices.Values(ex.want))
		if !slices.Equal(got, want) || (ex.until != "" && !strings.Contains(out, ex.until)) {
			t.Errorf("%s:%d: statuses %v, want %v (until %q)\n%s\noutput:\n%s", file, ex.line, got, want, ex.until, script, out)
		}
		seen := map[string]bool{}
		for _, m := range resourceID.FindAllStringSubmatch(out, -1) {
			if !seen[m[1]] {
				seen[m[1]], ids[m[1]] = true, m[0]
			}
		}
	}
}

// curlEmptyReply is curl's exit status when the server closed the connection without answering.
const curlEmptyReply = 52

// runScript runs a shell script whose curl commands print their status on a line of their own.
// With noAnswer, the script may end with curl's exit status for a connection closed unanswered.
func runScript(t *testing.T, curlHome, script string, noAnswer bool) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cmd := osexec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", script)
	cmd.Env = append(os.Environ(), "CURL_HOME="+curlHome)
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	var exit *osexec.ExitError
	if noAnswer && errors.As(err, &exit) && exit.ExitCode() == curlEmptyReply {
		err = nil
	}
	if err != nil {
		t.Errorf("%v\n%s\noutput:\n%s", err, script, out)
	}
	return string(out)
}

// TestDocumentationLinksToCode checks every link to code in the docs names a file that exists
// and a function, type or method it declares, and that each pattern page draws its exchange.
func TestDocumentationLinksToCode(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(repoRoot, "docs/*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range append(files, filepath.Join(repoRoot, "README.md")) {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range codeLink.FindAllStringSubmatch(string(data), -1) {
			receiver, name, target := m[1], m[2], filepath.Join(filepath.Dir(file), m[3])
			if !declares(t, target, receiver, name) {
				t.Errorf("%s: %s does not declare %s", file, m[3], strings.Trim(receiver+"."+name, "."))
			}
		}
		if !notPatternPages[filepath.Base(file)] && !strings.Contains(string(data), "```mermaid\nsequenceDiagram") {
			t.Errorf("%s: no Mermaid sequence diagram", file)
		}
	}
}

// notPatternPages are the front page and the reference pages beside the patterns, which draw
// no exchange of their own.
var notPatternPages = map[string]bool{
	"README.md": true, "configuration.md": true, "development.md": true,
	"operating.md": true, "performance.md": true, "using-the-api.md": true,
}

// declares reports whether the Go file declares func or type name, or a method name on receiver.
func declares(t *testing.T, file, receiver, name string) bool {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Errorf("%v", err)
		return false
	}
	defer f.Close()
	decl := regexp.MustCompile(fmt.Sprintf(`^(func|type) %s\b`, regexp.QuoteMeta(name)))
	if receiver != "" {
		decl = regexp.MustCompile(fmt.Sprintf(`^func \(\w+ \*?%s(\[[^]]*\])?\) %s\b`, regexp.QuoteMeta(receiver), regexp.QuoteMeta(name)))
	}
	scanner := bufio.NewScanner(f)
	scanner.Buffer(make([]byte, 1<<20), 1<<20)
	for scanner.Scan() {
		if decl.MatchString(scanner.Text()) {
			return true
		}
	}
	return false
}

// TestReadmeLayout checks the README's Layout section lists each path once, and only paths
// that exist, so the map of the tree a newcomer reads first neither repeats nor drifts.
func TestReadmeLayout(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(data), "\n## Layout\n\n```\n")
	section, _, closed := strings.Cut(section, "\n```\n")
	if !ok || !closed {
		t.Fatal("README.md: no ``` block right after ## Layout")
	}
	seen := map[string]bool{}
	for line := range strings.Lines(section) {
		fields := strings.Fields(line)
		if len(fields) == 0 || strings.HasPrefix(line, " ") {
			continue // a blank line or a description's continuation
		}
		path := fields[0]
		if seen[path] {
			t.Errorf("README.md Layout lists %s twice", path)
		}
		seen[path] = true
		if matches, _ := filepath.Glob(filepath.Join(repoRoot, path)); len(matches) == 0 {
			t.Errorf("README.md Layout lists %s, which does not exist", path)
		}
	}
}
