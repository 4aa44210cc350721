package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/payments-api/payments-api/internal/testing/dbtest"
	"github.com/payments-api/payments-api/internal/testing/integration"
)

// labScreenshotsEnv names a folder where TestLabInBrowser leaves one PNG per experiment
// (`LAB_SCREENSHOTS=/tmp/lab go test ./cmd/payments-api -run TestLabInBrowser`); without
// it they go to the test's temporary folder.
const labScreenshotsEnv = "LAB_SCREENSHOTS"

// drawing is what the lab drew for one experiment, read from the page.
type drawing struct {
	State     string            `json:"state"`    // "done" or "failed"
	Status    string            `json:"status"`   // the status line: why it failed
	Account   string            `json:"account"`  // the throwaway account's id
	Outcomes  []string          `json:"outcomes"` // one per lane, in order
	Labels    []string          `json:"labels"`
	Headers   []string          `json:"headers"` // per lane, what its keyboard-reachable headers disclose
	Values    map[string]string `json:"values"`  // the final state, by data-key
	Invariant string            `json:"invariant"`
	Holds     string            `json:"holds"`
}

// readDrawing is evaluated in the page: the lanes, the final state and the invariant of one
// experiment's section, as the learner sees them.
const readDrawing = `(id => {
  const s = document.getElementById(id);
  const lanes = [...s.querySelectorAll("li.lane")];
  return {
    state: s.dataset.state || "", status: s.querySelector(".status").textContent,
    account: s.querySelector("dl.state").dataset.account || "",
    outcomes: lanes.map(l => l.dataset.outcome || ""),
    labels: lanes.map(l => l.querySelector(".label").textContent),
    headers: lanes.map(l => l.querySelector("details.headers > summary + pre")?.textContent || ""),
    values: Object.fromEntries([...s.querySelectorAll("dl.state dd")].map(d => [d.dataset.key, d.textContent])),
    invariant: s.querySelector("p.invariant").textContent, holds: s.querySelector("p.invariant").dataset.holds || "",
  };
})`

// TestLabInBrowser runs every experiment of the race lab in Debian's Chromium, against a
// fresh server and database, and checks that what the page drew is what the database holds:
// the lanes' outcomes against the rows each request made, the final state it shows against
// the same rows read directly, and that every invariant it claims holds. It keeps a
// screenshot of each experiment.
func TestLabInBrowser(t *testing.T) {
	t.Parallel()
	browser := chromiumPath(t)
	dbURL := dbtest.NewURL(t)
	srv := startServe(t, map[string]string{
		"DATABASE_URL": dbURL,
		// The webhook experiment's receiver is the server's own /lab (loopback), and its
		// second retry is far off, so that retry-now is what brings it.
		"WEBHOOK_ALLOW_PRIVATE_NETWORKS": "true",
		"WEBHOOK_RETRY_SCHEDULE":         "1s,10m,10m",
		"RATE_LIMIT_TEST_ACCOUNTS":       "100/1m",
	}, true)
	pool := integration.Pool(t, dbURL)
	shots := cmp.Or(os.Getenv(labScreenshotsEnv), t.TempDir())
	if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	ctx, cancelBrowser := newBrowser(ctx, t, browser)
	defer cancelBrowser()
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1200, 900), chromedp.Navigate(srv.base+"/lab"), chromedp.WaitVisible(chromedp.CSS("#run-all"))); err != nil {
		t.Fatalf("open /lab: %v", err)
	}
	for _, exp := range labExperiments {
		t.Run(exp.id, func(t *testing.T) {
			d := runExperiment(ctx, t, exp.id, filepath.Join(shots, "lab-"+exp.id+".png"))
			if d.State != "done" {
				t.Fatalf("the page says: %s; lanes %v %v", d.Status, d.Labels, d.Outcomes)
			}
			if d.Holds != "true" {
				t.Errorf("the invariant %q is drawn as not holding", d.Invariant)
			}
			if len(d.Outcomes) == 0 || d.Outcomes[0] != "created" || d.Account == "" {
				t.Fatalf("the first lane is %v, account %q: want the throwaway account created", d.Outcomes, d.Account)
			}
			exp.check(t, pool, d)
		})
	}
	darkScheme(ctx, t, filepath.Join(shots, "lab-retries-dark.png"))
	t.Logf("screenshots in %s", shots)
}

// darkScheme switches the page to the dark colour scheme, checks that its colours follow,
// and keeps a screenshot of the first experiment's drawing in it.
func darkScheme(ctx context.Context, t *testing.T, shot string) {
	t.Helper()
	dark := emulation.SetEmulatedMediaParams{Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}}}
	if _, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, dark); err != nil {
		t.Fatal(err)
	}
	background, err := chromedp.Run(ctx, chromedp.Evaluate[string](`getComputedStyle(document.body).backgroundColor`))
	if err != nil {
		t.Fatal(err)
	}
	if background != "rgb(13, 17, 23)" {
		t.Errorf("dark scheme: the page's background is %s", background)
	}
	png, err := chromedp.Run(ctx, chromedp.Screenshot(chromedp.CSS("#retries")))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(shot, png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// labExperiments pairs each experiment's section id with what its drawing must agree with.
var labExperiments = []struct {
	id    string
	check func(t *testing.T, pool *pgxpool.Pool, d drawing)
}{
	{"retries", func(t *testing.T, pool *pgxpool.Pool, d drawing) {
		race := d.Outcomes[1:]
		if len(race) != 20 {
			t.Errorf("%d lanes, want the 20 retries", len(race))
		}
		onlyOutcomes(t, race, "created", "replayed", "409")
		samePayments(t, pool, d, countOf(race, "created"))
		if countOf(race, "created") != 1 {
			t.Errorf("%d lanes drawn created, want exactly 1: %v", countOf(race, "created"), race)
		}
		// Each answer's headers are there for the keyboard too, not only in a hover title.
		for i, h := range d.Headers[1:] {
			replayed := strings.Contains(h, "Idempotent-Replayed: true")
			if !strings.Contains(h, "Request-Id: ") || replayed != (race[i] == "replayed") {
				t.Errorf("lane %d (%s) discloses headers %q", i+1, race[i], h)
			}
		}
	}},
	{"inflight", func(t *testing.T, pool *pgxpool.Pool, d drawing) {
		wantOutcomes(t, d, "created", "409", "replayed")
		samePayments(t, pool, d, 1)
	}},
	{"mismatch", func(t *testing.T, pool *pgxpool.Pool, d drawing) {
		wantOutcomes(t, d, "created", "422")
		samePayments(t, pool, d, 1)
		if amount := integration.Count(t, pool, `SELECT amount FROM payments WHERE account_id = $1`, d.Account); d.Values["amount"] != fmt.Sprint(amount) || amount != 2000 {
			t.Errorf("drawn amount %s, database %d: want the first body's 2000", d.Values["amount"], amount)
		}
	}},
	{"lost", func(t *testing.T, pool *pgxpool.Pool, d drawing) {
		wantOutcomes(t, d, "lost", "replayed")
		samePayments(t, pool, d, 1)
	}},
	{"etag", func(t *testing.T, pool *pgxpool.Pool, d drawing) {
		// account, payment, read, two PATCHes racing, read again, the retry
		race := d.Outcomes[3:5]
		if countOf(race, "412") != 1 || countOf(race, "ok") != 1 {
			t.Errorf("the racing PATCHes drawn %v, want one ok and one 412", race)
		}
		wantOutcomes(t, d, "created", "ok", race[0], race[1], "ok", "ok")
		var description string
		var version int
		if err := pool.QueryRow(context.Background(), `SELECT description, version FROM payments WHERE account_id = $1`, d.Account).Scan(&description, &version); err != nil {
			t.Fatal(err)
		}
		if d.Values["description"] != description || d.Values["etag"] != fmt.Sprintf(`"v%d"`, version) {
			t.Errorf("drawn %q %s, database %q version %d", d.Values["description"], d.Values["etag"], description, version)
		}
		if version != 3 { // created, one PATCH of the race, the retry: the 412 wrote nothing
			t.Errorf("version %d, want 3", version)
		}
	}},
	{"refunds", func(t *testing.T, pool *pgxpool.Pool, d drawing) {
		race := d.Outcomes[2:]
		onlyOutcomes(t, race, "created", "422")
		refunds := integration.Count(t, pool, `SELECT count(*) FROM refunds WHERE account_id = $1`, d.Account)
		refunded := integration.Count(t, pool, `SELECT amount_refunded FROM payments WHERE account_id = $1`, d.Account)
		if countOf(race, "created") != refunds || refunds != 3 || countOf(race, "422") != 2 {
			t.Errorf("drawn %v, database has %d refunds: want 3 created (one per refund row) and 2 refused", race, refunds)
		}
		if d.Values["amount_refunded"] != fmt.Sprint(refunded) || d.Values["refunds"] != fmt.Sprint(refunds) || refunded > 5000 {
			t.Errorf("drawn refunded %s in %s refunds, database %d in %d", d.Values["amount_refunded"], d.Values["refunds"], refunded, refunds)
		}
	}},
	{"ratelimit", func(t *testing.T, pool *pgxpool.Pool, d drawing) {
		race := d.Outcomes[1:]
		if countOf(race, "429") != 3 || countOf(race, "wait") != 1 {
			t.Errorf("drawn %v, want three 429s then one wait", race)
		}
		samePayments(t, pool, d, countOf(race, "created"))
	}},
	{"report", func(t *testing.T, pool *pgxpool.Pool, d drawing) {
		rows, err := pool.Query(context.Background(), `SELECT status FROM jobs WHERE account_id = $1 ORDER BY status`, d.Account)
		if err != nil {
			t.Fatal(err)
		}
		var statuses []string
		for rows.Next() {
			var s string
			if err := rows.Scan(&s); err != nil {
				t.Fatal(err)
			}
			statuses = append(statuses, s)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		if d.Values["statuses"] != strings.Join(statuses, ", ") {
			t.Errorf("drawn job statuses %q, database %v", d.Values["statuses"], statuses)
		}
		// The cancel's lane is the last: ok when the job was canceled, 409 when it had finished.
		cancel := d.Outcomes[len(d.Outcomes)-1]
		want := map[string]string{"ok": "canceled, succeeded", "409": "succeeded, succeeded"}[cancel]
		if strings.Join(statuses, ", ") != want {
			t.Errorf("the cancel is drawn %q, but the jobs are %v", cancel, statuses)
		}
		if countOf(d.Outcomes, "accepted") != 2 {
			t.Errorf("%d lanes drawn accepted, want the two 202s: %v", countOf(d.Outcomes, "accepted"), d.Outcomes)
		}
	}},
	{"webhook", func(t *testing.T, pool *pgxpool.Pool, d drawing) {
		attempts := integration.Count(t, pool, `SELECT count(*) FROM webhook_attempts a JOIN webhook_deliveries w ON w.id = a.delivery_id
			WHERE w.account_id = $1 AND a.response_status = 405`, d.Account)
		if drawn := countOf(d.Outcomes, "receiver"); drawn != attempts || attempts < 3 {
			t.Errorf("%d attempts drawn, the database has %d that got 405: want them equal, at least 3", drawn, attempts)
		}
		if d.Values["attempts"] != fmt.Sprint(attempts) {
			t.Errorf("drawn %s attempts, database %d", d.Values["attempts"], attempts)
		}
	}},
}

// runExperiment presses the experiment's Run button with the keyboard (focus, Enter), waits
// (bounded) until the page says it is done or failed, takes its screenshot and reads what
// it drew.
func runExperiment(ctx context.Context, t *testing.T, id, shot string) drawing {
	t.Helper()
	// The webhook experiment waits for the server's retries, which River runs from its
	// scheduler every few seconds: on a busy machine that alone can take half a minute.
	ctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	err := chromedp.Do(ctx,
		chromedp.Focus(chromedp.CSS("#"+id+" button[data-run]")),
		chromedp.KeyEvent("\r"),
	)
	if err == nil {
		_, err = chromedp.Run(ctx, chromedp.Poll[string](fmt.Sprintf(`document.getElementById(%q).dataset.state`, id), chromedp.WithPollingInterval(100*time.Millisecond), chromedp.WithPollingTimeout(85*time.Second)))
	}
	var d drawing
	if err == nil {
		d, err = chromedp.Run(ctx, chromedp.Evaluate[drawing](readDrawing+fmt.Sprintf("(%q)", id)))
	}
	var png []byte
	if err == nil {
		png, err = chromedp.Run(ctx, chromedp.Screenshot(chromedp.CSS("#"+id)))
	}
	if err != nil {
		t.Fatalf("run %s: %v", id, err)
	}
	if err := os.WriteFile(shot, png, 0o644); err != nil {
		t.Fatal(err)
	}
	return d
}

// newBrowser starts headless Chromium in a profile of its own. The machine may have no
// network: everything Chromium would fetch by itself is turned off.
func newBrowser(ctx context.Context, t *testing.T, path string) (context.Context, context.CancelFunc) {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox, // CI runs as root
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	browserCtx, cancelBrowser := chromedp.NewContext(allocCtx, chromedp.WithErrorf(t.Logf))
	return browserCtx, func() { cancelBrowser(); cancelAlloc() }
}

// chromiumPath is Debian's Chromium, or the one PUPPETEER_EXECUTABLE_PATH names (as for the
// Mermaid check). The suite needs it (.ci/run installs it): missing, the test fails.
func chromiumPath(t *testing.T) string {
	t.Helper()
	path := cmp.Or(os.Getenv("PUPPETEER_EXECUTABLE_PATH"), "/usr/bin/chromium")
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		t.Fatalf("no Chromium at %s: install Debian's chromium (apt-get install chromium), or name one in PUPPETEER_EXECUTABLE_PATH", path)
	}
	return path
}

// samePayments checks the payments the account holds against the drawing's count of them
// and against what the lanes say was made.
func samePayments(t *testing.T, pool *pgxpool.Pool, d drawing, drawnCreated int) {
	t.Helper()
	n := integration.Count(t, pool, `SELECT count(*) FROM payments WHERE account_id = $1`, d.Account)
	if d.Values["payments"] != fmt.Sprint(n) {
		t.Errorf("the page shows %s payments, the database holds %d", d.Values["payments"], n)
	}
	if n != drawnCreated {
		t.Errorf("the lanes show %d payments made (%v), the database holds %d", drawnCreated, d.Outcomes, n)
	}
}

// wantOutcomes checks every lane after the account's.
func wantOutcomes(t *testing.T, d drawing, want ...string) {
	t.Helper()
	if got := d.Outcomes[1:]; !slices.Equal(got, want) {
		t.Errorf("lanes drawn %v, want %v (%v)", got, want, d.Labels[1:])
	}
}

func onlyOutcomes(t *testing.T, got []string, allowed ...string) {
	t.Helper()
	for _, o := range got {
		if !slices.Contains(allowed, o) {
			t.Errorf("a lane drawn %q, want only %v", o, allowed)
		}
	}
}

func countOf(outcomes []string, outcome string) int {
	n := 0
	for _, o := range outcomes {
		if o == outcome {
			n++
		}
	}
	return n
}
