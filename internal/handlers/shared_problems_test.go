package handlers_test

import (
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/labstack/echo/v4"
	"github.com/payments-api/payments-api/internal/api"
	"github.com/payments-api/payments-api/internal/ratelimit"
	"github.com/payments-api/payments-api/internal/testing/apitest"
)

// sharedOperation is one operation of the spec, with requests that reach it.
type sharedOperation struct {
	method, path string
	op           *openapi3.Operation
}

// specOperations lists every operation of the spec.
func specOperations(t *testing.T) []sharedOperation {
	t.Helper()
	spec, err := api.GetSpec()
	if err != nil {
		t.Fatal(err)
	}
	var ops []sharedOperation
	for path, item := range spec.Paths.Map() {
		for method, op := range item.Operations() {
			ops = append(ops, sharedOperation{method: method, path: path, op: op})
		}
	}
	slices.SortFunc(ops, func(a, b sharedOperation) int { return strings.Compare(a.method+a.path, b.method+b.path) })
	return ops
}

func (o sharedOperation) documents(status string) bool { return o.op.Responses.Value(status) != nil }
func (o sharedOperation) hasBody() bool                { return o.op.RequestBody != nil }
func (o sharedOperation) public() bool                 { return o.op.Security != nil && len(*o.op.Security) == 0 }

var pathParam = regexp.MustCompile(`\{[a-z_]+\}`)

// url fills the path's parameter with id, or with a well-formed id of nothing when id is "".
func (o sharedOperation) url(id string) string {
	if id == "" {
		prefixes := map[string]string{"payments": "pay", "refunds": "re", "webhook-endpoints": "we", "events": "evt", "jobs": "job", "reports": "rpt", "problems": ""}
		resource := strings.Split(o.path, "/")[1]
		id = prefixes[resource] + "_NOSUCHTHING000000000000000"
		if resource == "problems" {
			id = "no-such-problem"
		}
	}
	return pathParam.ReplaceAllString(o.path, id)
}

// send makes one request of o with a well-formed body where it takes one.
func (o sharedOperation) send(c *apitest.Client, url string, body any, opts ...apitest.Option) *apitest.Response {
	if o.hasBody() && body == nil {
		body = map[string]any{}
	}
	opts = append([]apitest.Option{apitest.Header("Idempotency-Key", "shared-"+o.method+o.path)}, opts...)
	if o.method == http.MethodPatch {
		opts = append(opts, apitest.Header("If-Match", `"v1"`))
	}
	return c.Do(o.method, url, body, opts...)
}

// TestEveryOperationAnswersItsSharedProblems produces, for every operation of the spec, each
// shared response it documents: 401 without a key, 400 for a malformed id, query or body,
// 404 for an id of nothing, 413 for a body over the limit, 415 for a body in another media
// type, 429 past the account's quota, 500 when its handler fails (a panic stands in for the
// bug), and 503 while the database is unreachable. apitest
// checks every answer against the spec, so each of these documented answers is shown to be
// real, and a new operation gets them checked without a new test.
func TestEveryOperationAnswersItsSharedProblems(t *testing.T) {
	t.Parallel()
	b := setup(t)
	limited := limitedServer(t, b.dbURL)
	down := unreachableDatabase(t)
	failing := panickingServer(t)
	huge := `{"description":"` + strings.Repeat("x", 1<<20) + `"}`
	for _, o := range specOperations(t) {
		t.Run(o.method+" "+o.path, func(t *testing.T) {
			check := func(status string, res *apitest.Response) {
				t.Helper()
				if got := strconv.Itoa(res.Status); got != status {
					t.Errorf("want %s, got %s %s", status, got, res.Body)
				}
			}
			if o.documents("401") && !o.public() {
				check("401", o.send(b.client, o.url(""), nil, apitest.NoAuth()))
			}
			if o.documents("404") && strings.Contains(o.path, "{") {
				check("404", o.send(b.client, o.url(""), nil))
			}
			if o.documents("400") {
				check("400", malformed(b.client, o))
			}
			if o.documents("413") && o.hasBody() {
				check("413", o.send(b.client, o.url(""), huge))
			}
			if o.documents("415") && o.hasBody() {
				check("415", o.send(b.client, o.url(""), "{}", apitest.Header("Content-Type", "text/plain")))
			}
			if o.documents("429") && !o.public() {
				check("429", o.send(limited, o.url(""), nil))
			}
			if o.documents("500") {
				check("500", o.send(failing, o.url(""), validBodies[o.method+" "+o.path], apitest.Header("X-Test-Panic", "1")))
			}
			if o.documents("503") && !o.public() {
				check("503", o.send(down, o.url(""), nil))
			}
		})
	}
}

// validBodies are bodies the contract accepts, for operations that require members (the
// others take {}): a request must pass validation to reach the failing handler.
var validBodies = map[string]any{
	"POST /payments":          map[string]any{"amount": 100, "currency": "usd", "payment_method": "pm_card_visa"},
	"POST /refunds":           map[string]any{"payment_id": "pay_NOSUCHTHING000000000000000"},
	"POST /reports":           reportBody("payments", "csv"),
	"POST /webhook-endpoints": map[string]any{"url": "https://example.com/webhooks", "enabled_events": []string{"*"}},
}

// malformed sends o a request the contract refuses: a malformed id, else a limit out of
// range, else a body that is not JSON.
func malformed(c *apitest.Client, o sharedOperation) *apitest.Response {
	switch {
	case strings.Contains(o.path, "{"):
		return o.send(c, o.url("bad!id"), nil)
	case o.op.Parameters.GetByInAndName("query", "limit") != nil:
		return o.send(c, o.path+"?limit=0", nil)
	case !o.hasBody() && o.op.Parameters.GetByInAndName("header", "Prefer") != nil:
		return o.send(c, o.path, nil, apitest.Header("Prefer", "fault=unknown")) // refused before any work
	default:
		return o.send(c, o.path, "{")
	}
}

// limitedServer serves the same database with a quota of one request an hour per account,
// spent at once, so that every later request of that account answers 429.
func limitedServer(t *testing.T, dbURL string) *apitest.Client {
	t.Helper()
	one := ratelimit.Rate{Quota: 1, Window: time.Hour}
	limits := &ratelimit.Limits{
		Limiter:         ratelimit.NewMemory(),
		Default:         ratelimit.Policy{Name: "default", Rate: one},
		Writes:          ratelimit.Policy{Name: "writes", Rate: one},
		Unauthenticated: ratelimit.Policy{Name: "unauthenticated", Rate: ratelimit.Rate{Quota: 1000, Window: time.Second}},
	}
	c := setup(t, withDatabase(dbURL), withLimits(limits)).client
	if res := c.Get("/account"); res.Status != http.StatusOK {
		t.Fatalf("spend the quota: %d %s", res.Status, res.Body)
	}
	return c
}

// panickingServer is a client of a server whose every route panics on X-Test-Panic, behind
// all of the server's own middleware: what a bug in any handler would do.
func panickingServer(t *testing.T) *apitest.Client {
	t.Helper()
	b := setup(t)
	b.echo.Use(func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if c.Request().Header.Get("X-Test-Panic") != "" {
				panic("a handler bug")
			}
			return next(c)
		}
	})
	return b.client
}

// unreachableDatabase is a client of a server whose database never answers.
func unreachableDatabase(t *testing.T) *apitest.Client {
	t.Helper()
	return setup(t, withUnreachableDatabase()).client
}
