package handlers_test

import (
	"html"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/payments-api/payments-api/internal/testing/apitest"
)

// external finds what would make a page load something from elsewhere: an absolute or
// protocol-relative URL anywhere (attribute, CSS or script), or an element or rule that
// loads a resource at all (src, srcset, <link>, @import, url(), dynamic import()). The lab
// needs none: its script and styles are inline and it calls its own origin by path.
var external = regexp.MustCompile(`(?i)(https?:)?//[a-z0-9.-]+\.[a-z]|\bsrcset=|\bsrc=|<link\b|@import|\burl\(|\bimport\(`)

// TestExternalFinds shows the check above catches each way a page pulls in an asset.
func TestExternalFinds(t *testing.T) {
	t.Parallel()
	for _, page := range []string{
		`<script src="/x.js">`, `<img srcset="a.png 2x">`, `<link rel="stylesheet" href="/a.css">`,
		`<style>@import "a.css"</style>`, `<style>body{background:url(a.png)}</style>`,
		`<a href="https://example.com/">`, `fetch("//cdn.example.org/lib.js")`, `await import("./m.js")`,
	} {
		if !external.MatchString(page) {
			t.Errorf("%s: not found", page)
		}
	}
	if m := external.FindString(`<a href="/docs">the reference</a> <code>docs/idempotency.md</code>`); m != "" {
		t.Errorf("a link on the same origin found as external: %q", m)
	}
}

// TestLabIsSelfContained: GET /lab is one HTML page that loads nothing from elsewhere.
func TestLabIsSelfContained(t *testing.T) {
	t.Parallel()
	res := setup(t).client.Get("/lab", apitest.NoAuth())
	if res.Status != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("GET /lab: %d %s", res.Status, res.Header.Get("Content-Type"))
	}
	if m := external.FindAllString(string(res.Body), -1); len(m) > 0 {
		t.Errorf("the lab refers to something elsewhere: %q", m)
	}
}

// codeReference is how the lab cites code: <code data-line="TEXT">FILE:LINE</code>.
var codeReference = regexp.MustCompile(`<code data-line="([^"]+)">([^<:]+):(\d+)</code>`)

// TestLabCodeReferencesPointAtTheirCode: each file:line the lab cites exists and holds the
// code it names, so a reference cannot drift as the code moves; each docs/ page it names
// exists.
func TestLabCodeReferencesPointAtTheirCode(t *testing.T) {
	t.Parallel()
	page, err := os.ReadFile("lab.html")
	if err != nil {
		t.Fatal(err)
	}
	refs := codeReference.FindAllStringSubmatch(string(page), -1)
	if len(refs) < 9 {
		t.Fatalf("%d code references, want at least one per experiment", len(refs))
	}
	for _, ref := range refs {
		want, file := html.UnescapeString(ref[1]), ref[2]
		n, _ := strconv.Atoi(ref[3])
		lines := linesOf(t, filepath.Join("..", "..", file))
		if n < 1 || n > len(lines) || !strings.Contains(lines[n-1], want) {
			// Say where the code went, so that moving it is a one-number fix in lab.html.
			t.Errorf("%s:%d does not hold %q; lines that do: %v", file, n, want, linesHolding(lines, want))
		}
	}
	for _, doc := range regexp.MustCompile(`<code>(docs/[a-z-]+\.md)</code>`).FindAllStringSubmatch(string(page), -1) {
		if _, err := os.Stat(filepath.Join("..", "..", doc[1])); err != nil {
			t.Errorf("the lab names %s: %v", doc[1], err)
		}
	}
}

// linesOf reads a file's lines.
func linesOf(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(string(data), "\n")
}

// linesHolding gives the numbers of the lines that contain text.
func linesHolding(lines []string, text string) []int {
	var found []int
	for i, line := range lines {
		if strings.Contains(line, text) {
			found = append(found, i+1)
		}
	}
	return found
}
