package handlers_test

import (
	"bytes"
	"context"
	"maps"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/payments-api/payments-api/internal/api"
	"github.com/payments-api/payments-api/internal/testing/apitest"
)

// TestAnotherAccountsIDsAreNotFound walks the spec: every operation that takes a resource id
// (in its path, a query parameter or its body) is called by one account with the ids of
// another's resources. In the path the answer is 404 whatever the request carries: HEAD as
// well as GET, If-None-Match with the resource's current ETag (never 304), If-Match with it
// (never 412 or 200). In a query or a body the answer is the one an id of nothing gets, a
// 400 naming the field. Afterwards the owner reads its resources unchanged. The operations,
// their id parameters and the requests come from the spec, so a new operation is covered the
// day it is written; the test fails until tenant.create can make the ids it takes.
func TestAnotherAccountsIDsAreNotFound(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ops := idOperations(t)
	owner, intruder := newTenant(t, b, b.client), newTenant(t, b, b.other)
	for _, kind := range idKinds(ops) {
		owner.id(kind)
		intruder.id(kind)
	}
	before := owner.snapshot(ops)

	for _, o := range ops {
		if len(o.pathIDs) > 0 {
			t.Run(o.method+" "+o.path, func(t *testing.T) { probePath(t, o, owner, intruder) })
		}
		for _, p := range o.queryIDs {
			t.Run(o.method+" "+o.path+"?"+p.name, func(t *testing.T) {
				probe := func(id string) *apitest.Response {
					return intruder.send(o, o.method, o.url(intruder)+"?"+url.Values{p.name: {id}}.Encode(), o.body(t, intruder))
				}
				assertAnswersAsNothing(t, p, probe(owner.id(p.kind)), probe(p.nothing()))
			})
		}
		for _, p := range o.bodyIDs {
			t.Run(o.method+" "+o.path+" "+p.name, func(t *testing.T) {
				probe := func(id string) *apitest.Response {
					body := o.body(t, intruder)
					body[p.name] = id
					return intruder.send(o, o.method, o.url(intruder), body)
				}
				assertAnswersAsNothing(t, p, probe(owner.id(p.kind)), probe(p.nothing()))
			})
		}
	}

	for target, was := range before {
		if now := owner.read(target); !now.equal(was) {
			t.Errorf("the owner's %s changed while another account called it:\nbefore %s %s\nafter  %s %s", target, was.etag, was.body, now.etag, now.body)
		}
	}
}

// probePath calls o with the owner's ids in its path, as another account, in every variant
// the operation's parameters allow: each must be 404.
func probePath(t *testing.T, o idOperation, owner, intruder *tenant) {
	target := o.url(owner)
	type variant struct {
		method string
		header map[string]string
	}
	variants := []variant{{method: o.method}}
	if o.method == http.MethodGet {
		variants = append(variants, variant{method: http.MethodHead})
	}
	if o.takes("If-None-Match") {
		tag := owner.etag(t, target)
		for _, m := range []string{http.MethodGet, http.MethodHead} {
			variants = append(variants, variant{m, map[string]string{"If-None-Match": tag}})
		}
	}
	if o.takes("If-Match") { // without it the answer is 428, before any lookup
		variants = []variant{
			{o.method, map[string]string{"If-Match": owner.etag(t, target)}},
			{o.method, map[string]string{"If-Match": "*"}},
		}
	}
	for _, v := range variants {
		var opts []apitest.Option
		for name, value := range v.header {
			opts = append(opts, apitest.Header(name, value))
		}
		res := intruder.send(o, v.method, target, o.body(t, owner), opts...)
		if res.Status != http.StatusNotFound {
			t.Errorf("%s %s %v by another account: %d %s, want 404", v.method, target, v.header, res.Status, res.Body)
		} else if v.method != http.MethodHead && res.Problem(t).Type != "/problems/not-found" {
			t.Errorf("%s %s %v by another account: %s, want /problems/not-found", v.method, target, v.header, res.Body)
		}
	}
}

// assertAnswersAsNothing: the answer to another account's id in a query parameter or a body
// member is the answer to an id of nothing, a 400 naming the field, so it tells nothing.
func assertAnswersAsNothing(t *testing.T, p idParam, foreign, nothing *apitest.Response) {
	t.Helper()
	if foreign.Status != nothing.Status || foreign.Status != http.StatusBadRequest {
		t.Fatalf("%s of another account: %d %s; of nothing: %d %s; want both 400", p.name, foreign.Status, foreign.Body, nothing.Status, nothing.Body)
	}
	got, want := foreign.Problem(t), nothing.Problem(t)
	field := p.name
	if p.in == inBody {
		field = "/" + p.name
	}
	if got.Type != want.Type || !slices.Equal(fieldsOf(got), fieldsOf(want)) || !slices.Equal(fieldsOf(got), []string{field}) {
		t.Errorf("%s of another account: %s\nof nothing: %s\nwant the same problem, naming %s", p.name, foreign.Body, nothing.Body, field)
	}
}

// idParam is a parameter or body member that carries a resource id.
type idParam struct {
	name string
	in   string // path, query or body
	kind string // the ids' prefix, as the schema's pattern gives it: "pay_", "we_", ...
}

// inBody is where a body member is, beside OpenAPI's parameter locations.
const inBody = "body"

// nothing is a well-formed id of this kind that names no resource.
func (p idParam) nothing() string { return p.kind + "NoSuchThing0000" }

// idOperation is an operation that needs an API key and takes at least one resource id.
type idOperation struct {
	sharedOperation
	params                     []*openapi3.Parameter // the path item's as well as the operation's
	pathIDs, queryIDs, bodyIDs []idParam
}

// idPattern is how the spec writes an id's schema: ^pay_[A-Za-z0-9]+$ gives the kind "pay_".
var idPattern = regexp.MustCompile(`^\^([a-z]+_)\[A-Za-z0-9\]\+\$$`)

// idOperations lists the operations of the spec that need an API key and take a resource
// id. A path parameter that is not an id fails the test: it would not know what to send.
func idOperations(t *testing.T) []idOperation {
	t.Helper()
	spec, err := api.GetSpec()
	if err != nil {
		t.Fatal(err)
	}
	var ops []idOperation
	for _, so := range specOperations(t) {
		if so.public() { // no account, nothing to scope
			continue
		}
		if so.method == http.MethodHead { // its GET's, which probePath sends as HEAD too
			continue
		}
		o := idOperation{sharedOperation: so, params: parameters(spec.Paths.Value(so.path), so.op)}
		for _, p := range o.params {
			kind := idKind(p.Schema)
			switch {
			case p.In == openapi3.ParameterInPath && kind == "":
				t.Fatalf("%s %s: path parameter %s is not an id (^xx_[A-Za-z0-9]+$): teach the tenancy test what to send", so.method, so.path, p.Name)
			case p.In == openapi3.ParameterInPath:
				o.pathIDs = append(o.pathIDs, idParam{p.Name, p.In, kind})
			case p.In == openapi3.ParameterInQuery && kind != "":
				o.queryIDs = append(o.queryIDs, idParam{p.Name, p.In, kind})
			}
		}
		if schema := requestSchema(so.op); schema != nil {
			for _, name := range slices.Sorted(maps.Keys(schema.Properties)) {
				if kind := idKind(schema.Properties[name]); kind != "" {
					o.bodyIDs = append(o.bodyIDs, idParam{name, inBody, kind})
				}
			}
		}
		if len(o.pathIDs)+len(o.queryIDs)+len(o.bodyIDs) > 0 {
			ops = append(ops, o)
		}
	}
	return ops
}

// parameters merges a path item's parameters with its operation's, the operation's winning.
func parameters(item *openapi3.PathItem, op *openapi3.Operation) []*openapi3.Parameter {
	var params []*openapi3.Parameter
	for _, ref := range op.Parameters {
		params = append(params, ref.Value)
	}
	for _, ref := range item.Parameters {
		if op.Parameters.GetByInAndName(ref.Value.In, ref.Value.Name) == nil {
			params = append(params, ref.Value)
		}
	}
	return params
}

// requestSchema is the schema of the operation's JSON body, nil when it takes none.
func requestSchema(op *openapi3.Operation) *openapi3.Schema {
	if op.RequestBody == nil {
		return nil
	}
	media := op.RequestBody.Value.Content.Get("application/json")
	if media == nil || media.Schema == nil {
		return nil
	}
	return media.Schema.Value
}

func idKind(schema *openapi3.SchemaRef) string {
	if schema == nil || schema.Value == nil {
		return ""
	}
	if m := idPattern.FindStringSubmatch(schema.Value.Pattern); m != nil {
		return m[1]
	}
	return ""
}

// idKinds lists, sorted, every kind of id the operations take.
func idKinds(ops []idOperation) []string {
	var kinds []string
	for _, o := range ops {
		for _, p := range slices.Concat(o.pathIDs, o.queryIDs, o.bodyIDs) {
			if !slices.Contains(kinds, p.kind) {
				kinds = append(kinds, p.kind)
			}
		}
	}
	slices.Sort(kinds)
	return kinds
}

func (o idOperation) takes(header string) bool {
	return slices.ContainsFunc(o.params, func(p *openapi3.Parameter) bool {
		return p.In == openapi3.ParameterInHeader && strings.EqualFold(p.Name, header)
	})
}

// url is the operation's path with a's ids in it.
func (o idOperation) url(a *tenant) string {
	path := o.path
	for _, p := range o.pathIDs {
		path = strings.ReplaceAll(path, "{"+p.name+"}", a.id(p.kind))
	}
	return path
}

// tenancyBodies are request bodies that would change something, by operation, their ids
// those of the account given. An operation that takes a body with an id, or requires one,
// needs one here.
var tenancyBodies = map[string]func(a *tenant) map[string]any{
	"PATCH /payments/{id}": func(*tenant) map[string]any {
		return map[string]any{"description": "written by another account"}
	},
	"PATCH /webhook-endpoints/{id}": func(*tenant) map[string]any {
		return map[string]any{"description": "written by another account", "disabled": true}
	},
	"POST /events/{id}/redeliver": func(a *tenant) map[string]any { return map[string]any{"endpoint_id": a.id("we_")} },
	"POST /refunds":               func(a *tenant) map[string]any { return refundOf(a.id("pay_"), 1) },
}

// body is the operation's request body with a's ids, or nil when it takes none.
func (o idOperation) body(t *testing.T, a *tenant) map[string]any {
	t.Helper()
	if build, ok := tenancyBodies[o.method+" "+o.path]; ok {
		return build(a)
	}
	if o.hasBody() && (o.op.RequestBody.Value.Required || len(o.bodyIDs) > 0) {
		t.Fatalf("%s %s takes a body: add one to tenancyBodies", o.method, o.path)
	}
	return nil
}

// tenant is one account of the tenancy test, with one resource of each kind it was asked
// for. t is the test that makes them: resources are made before any subtest runs.
type tenant struct {
	t   *testing.T
	b   *testBundle
	c   *apitest.Client
	ids map[string]string // by kind: "pay_" → a payment of the account
}

func newTenant(t *testing.T, b *testBundle, c *apitest.Client) *tenant {
	return &tenant{t: t, b: b, c: c, ids: map[string]string{}}
}

// id is the account's resource of kind, made on first use.
func (a *tenant) id(kind string) string {
	if id, ok := a.ids[kind]; ok {
		return id
	}
	id := a.create(kind)
	a.ids[kind] = id
	return id
}

// create makes a resource of kind in the account and returns its id. Every kind of id an
// operation takes needs a case here: the tenancy test fails on a kind without one.
func (a *tenant) create(kind string) string {
	t, c := a.t, a.c
	t.Helper()
	switch kind {
	case "pay_":
		p, _ := createPayment(t, c, 5000)
		return p.ID
	case "re_":
		var r refund
		c.Post("/refunds", refundOf(a.id("pay_"), 100), apitest.Header("Idempotency-Key", newKey())).Decode(t, &r)
		return r.ID
	case "we_":
		e, _ := createEndpoint(t, c, publicURL, "*")
		return e.ID
	case "evt_": // made after the endpoint, so the event has a delivery there
		a.id("we_")
		createPayment(t, c, 700)
		var page struct{ Data []struct{ ID string } }
		c.Get("/events?type=payment.succeeded&limit=1").Decode(t, &page)
		return page.Data[0].ID
	case "msg_":
		a.id("evt_")
		return deliveries(t, c, a.id("we_"))[0].ID
	case "job_": // queued, and held there an hour, so the workers rpt_ starts leave it alone
		j := requestReport(t, c, reportBody("payments", "csv"))
		_, err := a.b.pool.Exec(context.Background(), `UPDATE river_job SET state = 'scheduled', scheduled_at = now() + interval '1 hour'
			WHERE id = (SELECT river_job_id FROM jobs WHERE id = $1)`, j.ID)
		if err != nil {
			t.Fatal(err)
		}
		return j.ID
	case "rpt_": // a finished report: workers run only while it is built
		stop := startWorkers(t, a.b.pool, 100)
		defer stop()
		return waitForJob(t, c, requestReport(t, c, reportBody("payments", "json")).ID, "succeeded").Result.ReportID
	}
	t.Fatalf("nothing makes a resource with an id %q...: add a case to tenant.create, so the tenancy test can cover the operations that take one", kind)
	return ""
}

// send calls o (with method: o's, or HEAD for a GET) as this tenant's account, with a fresh
// Idempotency-Key where o takes one.
func (a *tenant) send(o idOperation, method, target string, body map[string]any, opts ...apitest.Option) *apitest.Response {
	if o.takes("Idempotency-Key") {
		opts = append(opts, apitest.Header("Idempotency-Key", newKey()))
	}
	if body == nil { // no JSON null
		return a.c.Do(method, target, nil, opts...)
	}
	return a.c.Do(method, target, body, opts...)
}

// etag is the current ETag of the resource at target, as its owner reads it.
func (a *tenant) etag(t *testing.T, target string) string {
	t.Helper()
	target = strings.TrimSuffix(target, "/rotate-secret") // an action on the endpoint: its tag
	res := a.c.Get(target)
	if tag := res.Header.Get("ETag"); res.Status == http.StatusOK && tag != "" {
		return tag
	}
	t.Fatalf("GET %s by its owner: %d without an ETag to send", target, res.Status)
	return ""
}

// reading is what a GET answered.
type reading struct {
	status int
	etag   string
	body   []byte
}

func (r reading) equal(o reading) bool {
	return r.status == o.status && r.etag == o.etag && bytes.Equal(r.body, o.body)
}

func (a *tenant) read(target string) reading {
	res := a.c.Get(target)
	return reading{res.Status, res.Header.Get("ETag"), res.Body}
}

// snapshot reads, as the owner, every GET of the operations that has ids in its path.
func (a *tenant) snapshot(ops []idOperation) map[string]reading {
	seen := map[string]reading{}
	for _, o := range ops {
		if o.method == http.MethodGet && len(o.pathIDs) > 0 {
			target := o.url(a)
			if seen[target] = a.read(target); seen[target].status != http.StatusOK {
				a.t.Fatalf("GET %s by its owner: %d %s", target, seen[target].status, seen[target].body)
			}
		}
	}
	return seen
}

// TestListsShowOnlyTheCallersOwnRows protects the account_id filter of every list query
// that takes no id of the caller's to start from: RefundList (GET /refunds), EventList
// (GET /events), EventListByType (GET /events?type=), WebhookEndpointList
// (GET /webhook-endpoints) and JobListByStatus (GET /jobs?status=). Another account's rows
// of each kind exist; none may appear in the caller's lists.
func TestListsShowOnlyTheCallersOwnRows(t *testing.T) {
	t.Parallel()
	b := setup(t)
	theirs := map[string]string{} // id -> what it is
	for _, c := range []*apitest.Client{b.client, b.other} {
		p, _ := createPayment(t, c, 1000)
		res := c.Post("/refunds", refundOf(p.ID, 100), apitest.Header("Idempotency-Key", newKey()))
		if res.Status != http.StatusCreated {
			t.Fatalf("refund: %d %s", res.Status, res.Body)
		}
		var r refund
		res.Decode(t, &r)
		e, _ := createEndpoint(t, c, publicURL, "*")
		j := requestReport(t, c, reportBody("payments", "csv"))
		if c == b.other {
			theirs[p.ID], theirs[r.ID], theirs[e.ID], theirs[j.ID] = "payment", "refund", "endpoint", "job"
			var evs page[struct {
				ID string `json:"id"`
			}]
			c.Get("/events?limit=100").Decode(t, &evs)
			for _, ev := range evs.Data {
				theirs[ev.ID] = "event"
			}
		}
	}
	for _, path := range []string{
		"/refunds", "/events", "/events?type=payment.succeeded", "/events?type=refund.succeeded",
		"/webhook-endpoints", "/jobs", "/jobs?status=queued",
	} {
		sep := "?"
		if strings.Contains(path, "?") {
			sep = "&"
		}
		res := b.client.Get(path + sep + url.Values{"limit": {"100"}}.Encode())
		if res.Status != http.StatusOK {
			t.Fatalf("GET %s: %d %s", path, res.Status, res.Body)
		}
		var got page[struct {
			ID string `json:"id"`
		}]
		res.Decode(t, &got)
		if len(got.Data) == 0 {
			t.Errorf("GET %s lists nothing, want the caller's own rows", path)
		}
		for _, row := range got.Data {
			if what, ok := theirs[row.ID]; ok {
				t.Errorf("GET %s lists another account's %s %s", path, what, row.ID)
			}
		}
	}
}

// page is one page of any list.
type page[T any] struct {
	Data    []T  `json:"data"`
	HasMore bool `json:"has_more"`
}

// TestARefundsReportHoldsOnlyTheCallersRefunds protects RefundReportPage's account_id filter:
// a refunds report lists the requesting account's refunds in its range, never another
// account's refunds of the same range.
func TestARefundsReportHoldsOnlyTheCallersRefunds(t *testing.T) {
	t.Parallel()
	b := setup(t)
	startWorkers(t, b.pool, 3)
	ids := map[*apitest.Client]string{}
	for _, c := range []*apitest.Client{b.client, b.other} {
		p, _ := createPayment(t, c, 1000)
		res := c.Post("/refunds", refundOf(p.ID, 100), apitest.Header("Idempotency-Key", newKey()))
		var r refund
		res.Decode(t, &r)
		ids[c] = r.ID
	}
	j := requestReport(t, b.client, reportBody("refunds", "csv"))
	done := waitForJob(t, b.client, j.ID, "succeeded")
	dl := b.client.Get(done.Result.DownloadURL)
	if dl.Status != http.StatusOK {
		t.Fatalf("download: %d %s", dl.Status, dl.Body)
	}
	if !strings.Contains(string(dl.Body), ids[b.client]) {
		t.Errorf("the report lacks the caller's refund %s:\n%s", ids[b.client], dl.Body)
	}
	if strings.Contains(string(dl.Body), ids[b.other]) {
		t.Errorf("the report holds another account's refund %s:\n%s", ids[b.other], dl.Body)
	}
}

// TestRefundsOfAPaymentIDAnotherAccountAlsoHas protects RefundListByPayment's account_id
// filter. A payment's key is (account_id, id), so an id names a payment within its account
// only: GET /refunds?payment_id= checks the payment in the caller's account first, and then
// lists that payment's refunds, never those of another account's payment under the same id.
// The test gives the caller a payment with the id of another account's refunded payment (the
// collision random ids make unlikely, not impossible).
func TestRefundsOfAPaymentIDAnotherAccountAlsoHas(t *testing.T) {
	t.Parallel()
	b := setup(t)
	theirs, _ := createPayment(t, b.other, 1000)
	res := b.other.Post("/refunds", refundOf(theirs.ID, 100), apitest.Header("Idempotency-Key", newKey()))
	if res.Status != http.StatusCreated {
		t.Fatalf("refund: %d %s", res.Status, res.Body)
	}
	_, err := b.pool.Exec(context.Background(), `
		INSERT INTO payments (id, account_id, amount, currency, status, payment_method, metadata)
		SELECT id, $2, amount, currency, status, payment_method, metadata FROM payments WHERE id = $1`,
		theirs.ID, accountOf(t, b.client))
	if err != nil {
		t.Fatal(err)
	}
	var got page[refund]
	res = b.client.Get("/refunds?payment_id=" + theirs.ID)
	if res.Status != http.StatusOK {
		t.Fatalf("GET /refunds?payment_id=: %d %s", res.Status, res.Body)
	}
	res.Decode(t, &got)
	if len(got.Data) != 0 {
		t.Errorf("the caller's payment %s lists %d refunds, another account's: %+v", theirs.ID, len(got.Data), got.Data)
	}
}
