package handlers_test

import (
	"bufio"
	"encoding/json"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/dunglas/httpsfv"
	"github.com/payments-api/payments-api/internal/testing/apitest"
)

// serverTiming parses Server-Timing as the RFC 8941 list it is, failing the test on any
// other syntax, and returns each phase's dur (milliseconds) by name, with the names in
// order under "".
func serverTiming(t *testing.T, res *apitest.Response) map[string]float64 {
	t.Helper()
	list, err := httpsfv.UnmarshalList(res.Header.Values("Server-Timing"))
	if err != nil {
		t.Fatalf("Server-Timing %q is not a structured-field list: %v", res.Header.Values("Server-Timing"), err)
	}
	phases := map[string]float64{}
	for _, member := range list {
		item, ok := member.(httpsfv.Item)
		if !ok {
			t.Fatalf("Server-Timing member %v is not an item", member)
		}
		name, ok := item.Value.(httpsfv.Token)
		dur, hasDur := item.Params.Get("dur")
		ms, isDecimal := dur.(float64)
		if !ok || !hasDur || !isDecimal || ms < 0 {
			t.Fatalf("Server-Timing member %v: want a token with a decimal dur", member)
		}
		phases[string(name)] += ms
	}
	return phases
}

func phaseNames(t *testing.T, res *apitest.Response) []string {
	t.Helper()
	list, _ := httpsfv.UnmarshalList(res.Header.Values("Server-Timing"))
	names := make([]string, 0, len(list))
	for _, m := range list {
		names = append(names, string(m.(httpsfv.Item).Value.(httpsfv.Token)))
	}
	return names
}

// TestServerTimingNamesThePhases: a create claims its key, charges and commits; its replay
// claims (and finds the key done) and replays, and charges nothing.
func TestServerTimingNamesThePhases(t *testing.T) {
	t.Parallel()
	b := setup(t)
	key := newKey()
	created := b.client.Post("/payments", visa(100), apitest.Header("Idempotency-Key", key))
	replayed := b.client.Post("/payments", visa(100), apitest.Header("Idempotency-Key", key))
	for _, tt := range []struct {
		name      string
		res       *apitest.Response
		want, not []string
	}{
		{"create", created, []string{"auth", "ratelimit", "read", "validate", "claim", "charge", "commit", "total"}, []string{"replay"}},
		{"replay", replayed, []string{"auth", "validate", "claim", "replay", "total"}, []string{"charge"}},
	} {
		serverTiming(t, tt.res) // parses
		names := phaseNames(t, tt.res)
		for _, want := range tt.want {
			if !slices.Contains(names, want) {
				t.Errorf("%s: Server-Timing %v lacks %s", tt.name, names, want)
			}
		}
		for _, not := range tt.not {
			if slices.Contains(names, not) {
				t.Errorf("%s: Server-Timing %v has %s", tt.name, names, not)
			}
		}
		if names[len(names)-1] != "total" {
			t.Errorf("%s: Server-Timing %v does not end with total", tt.name, names)
		}
	}
	for _, res := range []*apitest.Response{
		b.client.Get("/payments", apitest.NoAuth()),
		b.client.Get("/no/such/route"),
		b.client.Do(http.MethodOptions, "/payments", nil),
	} {
		if phases := serverTiming(t, res); phases["total"] <= 0 {
			t.Errorf("%d: Server-Timing %v has no total", res.Status, res.Header.Values("Server-Timing"))
		}
	}
}

// TestDebugLogStatesTheDecisions: at debug level, one line per request says what became of
// the Idempotency-Key, the ETag and the transaction.
func TestDebugLogStatesTheDecisions(t *testing.T) {
	t.Parallel()
	logs := &syncBuffer{}
	b := setup(t, withLogger(slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	c := b.client
	startWorkers(t, b.pool, 1)
	report := waitForJob(t, c, requestReport(t, c, reportBody("payments", "csv")).ID, "succeeded").Result

	key := newKey()
	created := c.Post("/payments", visa(100), apitest.Header("Idempotency-Key", key), apitest.Header("Request-Id", "create-1"))
	var p payment
	created.Decode(t, &p)
	c.Post("/payments", visa(100), apitest.Header("Idempotency-Key", key), apitest.Header("Request-Id", "replay-1"))
	c.Post("/payments", visa(200), apitest.Header("Idempotency-Key", key), apitest.Header("Request-Id", "mismatch-1"))
	c.Get("/payments/"+p.ID, apitest.Header("If-None-Match", created.Header.Get("ETag")), apitest.Header("Request-Id", "get-1"))
	c.Patch("/payments/"+p.ID, map[string]any{"description": "x"}, apitest.Header("If-Match", `"v9"`), apitest.Header("Request-Id", "stale-1"))
	c.Patch("/payments/"+p.ID, map[string]any{"description": "x"}, apitest.Header("If-Match", created.Header.Get("ETag")), apitest.Header("Request-Id", "patch-1"))
	c.Get(report.DownloadURL, apitest.Header("If-None-Match", `"`+report.ReportID+`"`), apitest.Header("Request-Id", "report-304"))
	c.Get(report.DownloadURL, apitest.Header("If-Match", `"rpt_another"`), apitest.Header("Request-Id", "report-412"))

	want := map[string][3]string{ // idempotency, etag, transaction
		"create-1":   {"claimed", "none", "committed"},
		"replay-1":   {"replayed", "none", "committed"},
		"mismatch-1": {"mismatch", "none", "rolled_back"},
		"get-1":      {"none", "not_modified", "none"},
		"stale-1":    {"none", "stale", "rolled_back"},
		"patch-1":    {"none", "matched", "committed"},
		"report-304": {"none", "not_modified", "none"},
		"report-412": {"none", "stale", "none"},
	}
	got := map[string][3]string{}
	scanner := bufio.NewScanner(strings.NewReader(logs.String()))
	for scanner.Scan() {
		var line map[string]string
		if json.Unmarshal(scanner.Bytes(), &line) != nil || line["msg"] != "decisions" {
			continue
		}
		if _, seen := got[line["request_id"]]; seen {
			t.Errorf("two decision lines for %s", line["request_id"])
		}
		got[line["request_id"]] = [3]string{line["idempotency"], line["etag"], line["transaction"]}
	}
	for id, w := range want {
		if got[id] != w {
			t.Errorf("%s: idempotency, etag, transaction = %v, want %v", id, got[id], w)
		}
	}
}

// TestCORSLetsBrowsersSendPrefer: a browser may send Prefer, and read what it did.
func TestCORSLetsBrowsersSendPrefer(t *testing.T) {
	t.Parallel()
	const app = "https://app.example.com"
	c := corsClient(t, []string{app})
	preflight := c.Do(http.MethodOptions, "/payments", nil, apitest.NoAuth(), apitest.Header("Origin", app),
		apitest.Header("Access-Control-Request-Method", "POST"), apitest.Header("Access-Control-Request-Headers", "prefer"))
	if allowed := strings.ToLower(preflight.Header.Get("Access-Control-Allow-Headers")); !strings.Contains(allowed, "prefer") {
		t.Errorf("Access-Control-Allow-Headers %q lacks prefer", allowed)
	}
	res := c.Get("/account", apitest.Header("Origin", app), apitest.Header("Prefer", "latency=1ms"))
	exposed := strings.Split(res.Header.Get("Access-Control-Expose-Headers"), ",")
	for _, name := range []string{"Server-Timing", "Preference-Applied"} {
		if !slices.Contains(exposed, name) || res.Header.Get(name) == "" {
			t.Errorf("%s: %q, exposed %v", name, res.Header.Get(name), exposed)
		}
	}
}
