package contract

import (
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
)

// conventionsTag tags the HEAD and OPTIONS operations the server answers for every path
// (internal/handlers/methods.go) and the generated code leaves out.
const conventionsTag = "HTTP conventions"

// TestEveryPathListsItsHTTPConventions: the spec lists what the server answers on every
// path, so a validator checks it: a HEAD beside every GET, with the GET's parameters,
// statuses and headers and no body, and an OPTIONS on every path, with no key.
func TestEveryPathListsItsHTTPConventions(t *testing.T) {
	spec := load(t).Spec()
	for path, item := range spec.Paths.Map() {
		sandboxOnly := true
		for method, op := range item.Operations() {
			if method != http.MethodHead && method != http.MethodOptions {
				sandboxOnly = sandboxOnly && SandboxOnly(op)
				if slices.Contains(op.Tags, conventionsTag) {
					t.Errorf("%s %s is tagged %q, which only HEAD and OPTIONS are", method, path, conventionsTag)
				}
			}
		}
		checkOptions(t, path, item.Options, sandboxOnly)
		if item.Get != nil {
			checkHead(t, path, item.Get, item.Head)
		} else if item.Head != nil {
			t.Errorf("HEAD %s is listed without a GET", path)
		}
	}
}

func checkOptions(t *testing.T, path string, op *openapi3.Operation, sandboxOnly bool) {
	t.Helper()
	if op == nil {
		t.Errorf("%s has no OPTIONS", path)
		return
	}
	if !slices.Contains(op.Tags, conventionsTag) || op.Security == nil || len(*op.Security) != 0 {
		t.Errorf("OPTIONS %s: tags %v, security %v; want %q and no key", path, op.Tags, op.Security, conventionsTag)
	}
	if r := op.Responses.Value("204"); r == nil || r.Ref != "#/components/responses/Options" {
		t.Errorf("OPTIONS %s does not answer 204 with components.responses.Options", path)
	}
	if SandboxOnly(op) != sandboxOnly || (op.Responses.Value("404") != nil) != sandboxOnly {
		t.Errorf("OPTIONS %s: x-sandbox-only %v, 404 listed %v; want both %v, as its path's operations", path, SandboxOnly(op), op.Responses.Value("404") != nil, sandboxOnly)
	}
}

func checkHead(t *testing.T, path string, get, head *openapi3.Operation) {
	t.Helper()
	if head == nil {
		t.Errorf("GET %s has no HEAD beside it", path)
		return
	}
	if !slices.Contains(head.Tags, conventionsTag) || SandboxOnly(head) != SandboxOnly(get) || securityOf(head) != securityOf(get) {
		t.Errorf("HEAD %s: tags %v, sandbox only %v, security %v; want %q and the GET's", path, head.Tags, SandboxOnly(head), securityOf(head), conventionsTag)
	}
	if h, g := paramRefs(head), paramRefs(get); !slices.Equal(h, g) {
		t.Errorf("HEAD %s takes %v, the GET %v", path, h, g)
	}
	if h, g := slices.Sorted(maps.Keys(head.Responses.Map())), slices.Sorted(maps.Keys(get.Responses.Map())); !slices.Equal(h, g) {
		t.Errorf("HEAD %s answers %v, the GET %v", path, h, g)
	}
	for status, res := range head.Responses.Map() {
		if len(res.Value.Content) > 0 {
			t.Errorf("HEAD %s %s documents a body", path, status)
		}
		if g := get.Responses.Value(status); g != nil {
			for name, header := range g.Value.Headers {
				if h := res.Value.Headers[name]; h == nil || h.Value.Required != header.Value.Required {
					t.Errorf("HEAD %s %s lacks the GET's header %s, or changes whether it is required", path, status, name)
				}
			}
		}
	}
}

// paramRefs lists an operation's parameters by $ref (every one is a shared component).
func paramRefs(op *openapi3.Operation) []string {
	var refs []string
	for _, p := range op.Parameters {
		refs = append(refs, p.Ref)
	}
	return refs
}

// securityOf names an operation's security: "default" for the spec's, "[]" for none.
func securityOf(op *openapi3.Operation) string {
	if op.Security == nil {
		return "default"
	}
	return fmt.Sprint(*op.Security)
}

// TestValidateResponseToHeadAndOptions: answers to HEAD and OPTIONS are checked against their
// operations, and those to a request no operation matches against x-unrouted-responses.
func TestValidateResponseToHeadAndOptions(t *testing.T) {
	c := load(t)
	base := http.Header{"Request-Id": {"r-1"}, "Server-Timing": {"total;dur=1"}}
	problem := withHeader(base, "Content-Type", "application/problem+json")
	notFound := `{"type":"/problems/not-found","title":"Not Found","status":404,"detail":"No such route."}`
	tests := []struct {
		name           string
		method, target string
		status         int
		header         http.Header
		body           string
		ok             bool
	}{
		{"HEAD as its GET, without the body", http.MethodHead, "/account", 200, withHeader(base, "Content-Type", "application/json"), "", true},
		{"HEAD with a body", http.MethodHead, "/account", 200, withHeader(base, "Content-Type", "application/json"), "{}", false},
		{"HEAD with a status its GET lacks", http.MethodHead, "/account", 404, base, "", false},
		{"HEAD without a required header", http.MethodHead, "/payments/pay_1", 304, base, "", false},
		{"HEAD of no path: 404, without the body", http.MethodHead, "/refunds/re_1/x", 404, problem, "", true},
		{"HEAD where there is no GET: 405 with Allow", http.MethodHead, "/test/accounts", 405, withHeader(problem, "Allow", "OPTIONS, POST"), "", true},
		{"OPTIONS listing the path's methods", http.MethodOptions, "/payments/not-an-id", 204, withHeader(base, "Allow", "OPTIONS, GET, HEAD, PATCH"), "", true},
		{"OPTIONS missing one", http.MethodOptions, "/payments/pay_1", 204, withHeader(base, "Allow", "OPTIONS, GET, HEAD"), "", false},
		{"OPTIONS listing one too many", http.MethodOptions, "/payments/pay_1", 204, withHeader(base, "Allow", "OPTIONS, GET, HEAD, PATCH, DELETE"), "", false},
		{"OPTIONS without Allow", http.MethodOptions, "/payments/pay_1", 204, base, "", false},
		{"OPTIONS answered 200", http.MethodOptions, "/payments/pay_1", 200, withHeader(base, "Allow", "OPTIONS, GET, HEAD, PATCH"), "", false},
		{"OPTIONS of no path: 404", http.MethodOptions, "/nowhere", 404, problem, notFound, true},
		{"a wrong method: 405 without Allow", http.MethodPut, "/payments", 405, problem, `{"type":"/problems/method-not-allowed","title":"Method Not Allowed","status":405,"detail":"x"}`, false},
		{"a wrong method: 405 with Allow", http.MethodPut, "/payments", 405, withHeader(problem, "Allow", "OPTIONS, GET, HEAD, POST"), `{"type":"/problems/method-not-allowed","title":"Method Not Allowed","status":405,"detail":"x"}`, true},
		{"CORS: one Vary line", http.MethodOptions, "/nowhere", 404, withHeader(problem, "Vary", "Origin"), notFound, true},
		{"CORS: Vary in two lines", http.MethodOptions, "/nowhere", 404, withValues(problem, "Vary", "Origin", "Access-Control-Request-Method"), notFound, false},
		{"CORS: another Expose-Headers", http.MethodOptions, "/nowhere", 404, withHeader(problem, "Access-Control-Expose-Headers", "ETag"), notFound, false},
	}
	for _, tt := range tests {
		req := httptest.NewRequestWithContext(t.Context(), tt.method, tt.target, nil)
		err := c.ValidateResponse(req, tt.status, tt.header, []byte(tt.body))
		if (err == nil) != tt.ok {
			t.Errorf("%s: %v, want ok=%v", tt.name, err, tt.ok)
		}
	}
}

func withValues(h http.Header, name string, values ...string) http.Header {
	h = h.Clone()
	h[http.CanonicalHeaderKey(name)] = values
	return h
}
