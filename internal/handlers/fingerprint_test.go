package handlers_test

import (
	"bytes"
	"encoding/json"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/payments-api/payments-api/internal/api"
	"github.com/payments-api/payments-api/internal/processor"
	"github.com/payments-api/payments-api/internal/testing/apitest"
)

// TestEveryMemberIsInTheFingerprint: for every POST that takes an Idempotency-Key (and acts on
// no one resource, whose id in the path its own tests change), a body
// with every member of its schema is sent with a key, then sent again with that key changed
// in one way at a time: each member given another valid value, each optional member dropped,
// each one added to a body that lacked it, and within an object member (metadata) a value
// changed, a key added, a key dropped. Each must be 422 idempotency-key-reused: a reused key
// never replays the answer to another request. The same bodies with their members in another
// order and other whitespace replay. Operations and members come from the spec, so a new one
// is covered; the test fails until keyedBodies knows how to build and change it.
func TestEveryMemberIsInTheFingerprint(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, o := range keyedOperations(t) {
		t.Run(o.method+" "+o.path, func(t *testing.T) {
			build, ok := keyedBodies[o.method+" "+o.path]
			if !ok {
				t.Fatalf("%s %s takes an Idempotency-Key: add its bodies to keyedBodies", o.method, o.path)
			}
			full, others := build(t, b.client)
			schema := requestSchema(o.op)
			for _, name := range slices.Sorted(maps.Keys(schema.Properties)) {
				if _, ok := full[name]; !ok {
					t.Errorf("member %s is not in the full body: add it to keyedBodies[%q]", name, o.method+" "+o.path)
				}
				if other, ok := others[name]; !ok || reflect.DeepEqual(other, full[name]) {
					t.Errorf("member %s has no other valid value: add one to keyedBodies[%q]", name, o.method+" "+o.path)
				}
			}
			if t.Failed() {
				return
			}
			minimal := make(map[string]any)
			for _, name := range schema.Required {
				minimal[name] = full[name]
			}
			assertKeyGuardsBody(t, b.client, o.path, full, changed(full, others, schema.Required))
			assertKeyGuardsBody(t, b.client, o.path, minimal, added(minimal, full))
		})
	}
}

// assertKeyGuardsBody sends body with a new key, then each variant with the same key (each
// must be 422 idempotency-key-reused), then body again, respaced and reordered: a replay.
func assertKeyGuardsBody(t *testing.T, c *apitest.Client, path string, body map[string]any, variants map[string]map[string]any) {
	t.Helper()
	key := apitest.Header("Idempotency-Key", newKey())
	first := c.Post(path, body, key)
	if first.Status < 200 || first.Status > 299 {
		t.Fatalf("POST %s %v: %d %s", path, body, first.Status, first.Body)
	}
	for _, what := range slices.Sorted(maps.Keys(variants)) {
		res := c.Post(path, variants[what], key)
		if res.Status != http.StatusUnprocessableEntity || res.Problem(t).Type != "/problems/idempotency-key-reused" {
			t.Errorf("the key sent again with %s: %d %s, want 422 /problems/idempotency-key-reused", what, res.Status, res.Body)
		}
	}
	res := c.Post(path, respaced(body), key)
	if res.Status != first.Status || res.Header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(res.Body, first.Body) {
		t.Errorf("the key sent again with the same body, reordered and respaced: %d replayed=%q %s, want a replay of %d %s",
			res.Status, res.Header.Get("Idempotent-Replayed"), res.Body, first.Status, first.Body)
	}
}

// keyedOperations lists every POST of the spec that takes an Idempotency-Key, required or
// optional, and has no path parameter.
func keyedOperations(t *testing.T) []sharedOperation {
	t.Helper()
	spec, err := api.GetSpec()
	if err != nil {
		t.Fatal(err)
	}
	var ops []sharedOperation
	for _, o := range specOperations(t) {
		takesKey := slices.ContainsFunc(parameters(spec.Paths.Value(o.path), o.op), func(p *openapi3.Parameter) bool {
			return p.In == openapi3.ParameterInHeader && strings.EqualFold(p.Name, "Idempotency-Key")
		})
		if o.method == http.MethodPost && takesKey && !strings.Contains(o.path, "{") {
			ops = append(ops, o)
		}
	}
	if len(ops) < 3 {
		t.Fatalf("%d operations take an Idempotency-Key, want at least POST /payments, /refunds and /reports", len(ops))
	}
	return ops
}

// keyedBodies builds, by operation, a request body with every member of its schema, and
// another valid value for each member.
var keyedBodies = map[string]func(t *testing.T, c *apitest.Client) (full, others map[string]any){
	"POST /payments": func(*testing.T, *apitest.Client) (full, others map[string]any) {
		return map[string]any{
				"amount": 5000, "currency": "usd", "payment_method": processor.CardVisa,
				"description": "Order 1001", "metadata": map[string]any{"order": "1001", "channel": "web"},
			}, map[string]any{
				"amount": 5001, "currency": "eur", "payment_method": processor.CardDeclined,
				"description": "Order 1002", "metadata": map[string]any{"order": "1002", "channel": "web"},
			}
	},
	"POST /refunds": func(t *testing.T, c *apitest.Client) (full, others map[string]any) {
		p, _ := createPayment(t, c, 5000)
		another, _ := createPayment(t, c, 5000)
		return map[string]any{
				"payment_id": p.ID, "amount": 100, "reason": "duplicate",
				"metadata": map[string]any{"ticket": "T-1", "agent": "ann"},
			}, map[string]any{
				"payment_id": another.ID, "amount": 101, "reason": "fraudulent",
				"metadata": map[string]any{"ticket": "T-2", "agent": "ann"},
			}
	},
	"POST /webhook-endpoints": func(*testing.T, *apitest.Client) (full, others map[string]any) {
		return map[string]any{
				"url": publicURL + "/full", "enabled_events": []any{"payment.succeeded"}, "description": "Orders",
			}, map[string]any{
				"url": publicURL + "/other", "enabled_events": []any{"refund.succeeded"}, "description": "Refunds",
			}
	},
	"POST /reports": func(*testing.T, *apitest.Client) (full, others map[string]any) {
		now := time.Now().UTC().Truncate(time.Second)
		from, to := now.Add(-time.Hour), now.Add(time.Hour)
		return map[string]any{
				"type": "payments", "format": "csv",
				"created_gte": from.Format(time.RFC3339), "created_lt": to.Format(time.RFC3339),
			}, map[string]any{
				"type": "refunds", "format": "json",
				"created_gte": from.Add(-time.Second).Format(time.RFC3339), "created_lt": to.Add(time.Second).Format(time.RFC3339),
			}
	},
}

// changed lists the variants of full that differ from it in one way: a member with another
// value, an optional member dropped, and, in an object member, a value changed, a key added
// and a key dropped.
func changed(full, others map[string]any, required []string) map[string]map[string]any {
	variants := map[string]map[string]any{}
	for name, value := range full {
		variants[name+" changed"] = with(full, name, others[name])
		if !slices.Contains(required, name) {
			variants[name+" dropped"] = with(full, name, nil)
		}
		object, ok := value.(map[string]any)
		if !ok {
			continue
		}
		first := slices.Sorted(maps.Keys(object))[0]
		variants[name+"."+first+" changed"] = with(full, name, with(object, first, object[first].(string)+"!"))
		variants[name+"."+first+" dropped"] = with(full, name, with(object, first, nil))
		variants[name+".added added"] = with(full, name, with(object, "added", "x"))
	}
	return variants
}

// added lists the variants of minimal with one more member of full.
func added(minimal, full map[string]any) map[string]map[string]any {
	variants := map[string]map[string]any{}
	for name, value := range full {
		if _, ok := minimal[name]; !ok {
			variants[name+" added"] = with(minimal, name, value)
		}
	}
	return variants
}

// with is a copy of m with name set to value, or without name when value is nil.
func with(m map[string]any, name string, value any) map[string]any {
	c := maps.Clone(m)
	if value == nil {
		delete(c, name)
	} else {
		c[name] = value
	}
	return c
}

// respaced is v as JSON with every object's members in reverse order and whitespace around
// every token: another text of the same request.
func respaced(v any) []byte {
	object, ok := v.(map[string]any)
	if !ok {
		data, _ := json.Marshal(v)
		return data
	}
	names := slices.Sorted(maps.Keys(object))
	slices.Reverse(names)
	var b bytes.Buffer
	b.WriteString("{\n")
	for i, name := range names {
		if i > 0 {
			b.WriteString(" ,\n")
		}
		b.WriteString("\t" + string(respaced(name)) + " : ")
		b.Write(respaced(object[name]))
	}
	b.WriteString("\n}")
	return b.Bytes()
}
