package apitest

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync"
)

// StatusDirEnv names the environment variable that, when set, makes every Client record each
// documented (method, path, status) it sees, as lines "METHOD PATH STATUS" in a file of its
// own under that directory. scripts/test sets it for go test and then checks, with
// internal/apitest/statuscoverage, that every status the spec documents was produced.
const StatusDirEnv = "APITEST_STATUS_DIR"

var statuses struct {
	sync.Mutex
	seen map[string]bool
	file *os.File
	err  error
}

// record notes that req's operation answered status, once per test binary.
func (c *Client) record(req *http.Request, status int) {
	dir := os.Getenv(StatusDirEnv)
	if dir == "" {
		return
	}
	path, method, ok := c.contract.Route(req)
	if !ok {
		return
	}
	line := fmt.Sprintf("%s %s %d\n", method, path, status)
	statuses.Lock()
	defer statuses.Unlock()
	if statuses.seen[line] {
		return
	}
	if statuses.file == nil && statuses.err == nil {
		statuses.seen = map[string]bool{}
		statuses.file, statuses.err = os.CreateTemp(dir, filepath.Base(os.Args[0])+"-*.statuses")
	}
	if statuses.err == nil {
		_, statuses.err = statuses.file.WriteString(line)
	}
	if statuses.err != nil {
		c.t.Errorf("record status in %s: %v", dir, statuses.err)
		return
	}
	statuses.seen[line] = true
}
