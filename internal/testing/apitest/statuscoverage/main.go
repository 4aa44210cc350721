// Command statuscoverage checks that the tests produced every response the contract
// documents: it lists each (method, path, status) of api/openapi.yaml and fails on one that
// no test's apitest.Client recorded (see apitest.StatusDirEnv) and that the allow-list below
// does not explain.
//
// One rule spares HEAD: a HEAD status counts as produced when the GET's same status was and
// at least one HEAD of that path was checked. The server answers HEAD by running the GET
// (internal/handlers/methods.go), so the GET's tests produce each status for both, and the
// HEAD recorded on the path shows the convention holds there; internal/handlers' tests send
// HEAD to every path that has a GET.
//
// scripts/test runs it after go test:
//
//	go run ./internal/testing/apitest/statuscoverage DIR
package main

import (
	"bufio"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/payments-api/payments-api/internal/api"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: statuscoverage DIR")
		os.Exit(2)
	}
	missing, err := uncovered(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "statuscoverage:", err)
		os.Exit(2)
	}
	if len(missing) > 0 {
		fmt.Fprintf(os.Stderr, "%d documented responses no test produced (test them, or allow-list them with a reason in %s):\n", len(missing), "internal/apitest/statuscoverage/unreachable.go")
		for _, m := range missing {
			fmt.Fprintln(os.Stderr, "  "+m)
		}
		os.Exit(1)
	}
	fmt.Println("every documented response was produced by a test, or is allow-listed with its reason")
}

// uncovered lists the documented responses neither recorded under dir nor allow-listed.
func uncovered(dir string) ([]string, error) {
	documented, err := documentedResponses()
	if err != nil {
		return nil, err
	}
	seen, err := recorded(dir)
	if err != nil {
		return nil, err
	}
	if len(seen) == 0 {
		return nil, fmt.Errorf("no responses recorded in %s: was go test run with %s set?", dir, "APITEST_STATUS_DIR")
	}
	var missing []string
	for _, r := range documented {
		_, allowed := unreachable[r]
		if !seen[r] && !allowed && !headLikeGet(r, seen) {
			missing = append(missing, r)
		}
	}
	for r := range unreachable {
		if !slices.Contains(documented, r) {
			return nil, fmt.Errorf("the allow-list names %q, which the spec does not document", r)
		}
		if seen[r] {
			return nil, fmt.Errorf("the allow-list names %q, which a test produced: remove it", r)
		}
	}
	return missing, nil
}

// headLikeGet reports whether r, "HEAD PATH STATUS", counts as produced by the package rule:
// "GET PATH STATUS" was recorded, and so was some HEAD of PATH.
func headLikeGet(r string, seen map[string]bool) bool {
	rest, ok := strings.CutPrefix(r, http.MethodHead+" ")
	if !ok || !seen[http.MethodGet+" "+rest] {
		return false
	}
	path := rest[:strings.LastIndexByte(rest, ' ')]
	for s := range seen {
		if strings.HasPrefix(s, http.MethodHead+" "+path+" ") {
			return true
		}
	}
	return false
}

// documentedResponses lists "METHOD PATH STATUS" for every response of every operation.
func documentedResponses() ([]string, error) {
	spec, err := api.GetSpec()
	if err != nil {
		return nil, err
	}
	var all []string
	for path, item := range spec.Paths.Map() {
		for method, op := range item.Operations() {
			for status := range op.Responses.Map() {
				if status != "default" {
					all = append(all, fmt.Sprintf("%s %s %s", method, path, status))
				}
			}
		}
	}
	slices.Sort(all)
	return all, nil
}

// recorded reads every line the test binaries wrote under dir.
func recorded(dir string) (map[string]bool, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.statuses"))
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		scanner := bufio.NewScanner(f)
		for scanner.Scan() {
			seen[strings.TrimSpace(scanner.Text())] = true
		}
		err = errors.Join(scanner.Err(), f.Close())
		if err != nil {
			return nil, err
		}
	}
	return seen, nil
}
