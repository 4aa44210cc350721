package contract

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"testing"

	"github.com/payments-api/payments-api/internal/api"
)

// TestSpecExamplesMatchTheirSchemas validates every example the spec gives against the
// schema it illustrates: a schema's `examples` (and `example`), and the `example` or
// `examples` of a parameter, header or media type against its `schema`. An example that
// contradicts its schema teaches readers, client generators and mock servers a wrong shape.
func TestSpecExamplesMatchTheirSchemas(t *testing.T) {
	spec, err := api.GetSpec()
	if err != nil {
		t.Fatal(err)
	}
	b, err := newBuilder(spec)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	var doc any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	found := collectExamples(doc, "#")
	// The walk must find every example the file holds (each `example:` or list of `examples:`
	// is at least one), or a misplaced one would escape the check.
	written := regexp.MustCompile(`(?m)^\s*(- )?examples?:`).FindAllIndex(api.SpecYAML, -1)
	if len(found) < len(written) {
		t.Fatalf("found %d examples, but api/openapi.yaml writes %d: the walk misses some", len(found), len(written))
	}
	for _, ex := range found {
		schema, err := b.compile(ex.schemaAt)
		if err != nil {
			t.Errorf("%s: %v", ex.at, err)
			continue
		}
		if err := schema.Validate(ex.value); err != nil {
			t.Errorf("example at %s does not match its schema %s: %v", ex.at, ex.schemaAt, err)
		}
	}
	t.Logf("%d examples checked", len(found))
}

type example struct {
	at, schemaAt string
	value        any
}

// collectExamples walks the spec's JSON form from node, at pointer at.
func collectExamples(node any, at string) []example {
	var found []example
	switch n := node.(type) {
	case []any:
		for i, v := range n {
			found = append(found, collectExamples(v, fmt.Sprintf("%s/%d", at, i))...)
		}
	case map[string]any:
		found = append(found, examplesOf(n, at)...)
		keys := make([]string, 0, len(n))
		for k := range n {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if k == "example" || k == "examples" {
				continue // examples are values, not more of the spec
			}
			found = append(found, collectExamples(n[k], at+"/"+escapePointer(k))...)
		}
	}
	return found
}

// examplesOf lists the examples one object carries, with the schema each illustrates.
func examplesOf(n map[string]any, at string) []example {
	var found []example
	schemaAt := at // a schema's own examples illustrate it
	if _, ok := n["schema"]; ok {
		schemaAt = at + "/schema" // a parameter's, header's or media type's illustrate its schema
	}
	if v, ok := n["example"]; ok {
		found = append(found, example{at: at + "/example", schemaAt: schemaAt, value: v})
	}
	switch examples := n["examples"].(type) {
	case []any: // JSON Schema: a list of values
		for i, v := range examples {
			found = append(found, example{at: fmt.Sprintf("%s/examples/%d", at, i), schemaAt: schemaAt, value: v})
		}
	case map[string]any: // OpenAPI: named Example objects
		for name, e := range examples {
			if obj, ok := e.(map[string]any); ok {
				if v, ok := obj["value"]; ok && schemaAt != at {
					found = append(found, example{at: at + "/examples/" + escapePointer(name) + "/value", schemaAt: schemaAt, value: v})
				}
			}
		}
	}
	return found
}
