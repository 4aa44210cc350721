// Package contract is api/openapi.yaml at run time: the router that finds each request's
// operation, and the JSON Schemas of every parameter, request body, response header and
// response body, compiled once when the contract is built. The server validates every request
// with it and the tests' client validates every response with it, so both read the one spec
// the same way.
//
// kin-openapi loads the spec and routes; santhosh-tekuri/jsonschema compiles and runs the
// schemas. A server that has routed a request itself validates it with
// Operation(...).Validate, and so routes once: routing again through kin-openapi's router
// would cost every request CPU and allocations for an answer it already has. kin-openapi's own
// request validation is not used: for OpenAPI 3.1 it compiles a JSON Schema validator on
// every call, costlier than the rest of the request, and formats the whole value into every
// error, so one hostile body could cost seconds and gigabytes.
//
// It imports the generated api package (for the embedded spec) and no other package of ours.
package contract

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"github.com/payments-api/payments-api/internal/api"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Contract is the compiled spec. It is safe for concurrent use.
type Contract struct {
	spec    *openapi3.T
	router  routers.Router
	byRoute map[route]*Operation
	// templates maps each path as echo's router names it to the spec's template (Template).
	templates map[string]string
	unrouted  map[int]*response // x-unrouted-responses: the 404 and 405 of requests no operation matches
	common    []*value          // x-common-response-headers: headers any response may carry
	notes     enumNotes
}

// schemasCompiled counts every schema compiled in this process. Only New compiles, so it stays
// still while requests are validated, which a test holds.
var schemasCompiled atomic.Int64

// Operation is one operation's compiled validators.
type Operation struct {
	id        string
	params    []*value
	body      *requestBody // nil when the operation takes no body
	responses map[string]*response
	notes     enumNotes
	// refused are the preconditions it does not declare, where it answers 400 (see
	// preconditionFields).
	refused []string
}

// value is a parameter or header: a string on the wire, typed by its schema.
type value struct {
	name     string
	in       string // path, query or header
	field    string // a header's name as net/http keys a Header (http.CanonicalHeaderKey)
	required bool
	kind     string // integer, number, boolean or string: what the string is converted to
	schema   *jsonschema.Schema
	plain    *plainString // set when the schema is a plain string's: see plainString
}

type requestBody struct {
	required bool
	media    map[string]*media // by media type, lowercase, without parameters
}

type media struct {
	schema   *jsonschema.Schema
	asString bool // the schema is a string: the body is validated as text, not decoded
}

type response struct {
	headers []*value
	media   map[string]*media
	notes   enumNotes
}

// Load returns the contract of the spec embedded in the api package. It is built on the first
// call and shared after that: a Contract never changes, and building one (parsing the spec,
// compiling every schema) is the costliest step of a server's start, so a process that starts
// many servers, as a test binary does, pays for it once.
func Load() (*Contract, error) { return loadEmbedded() }

var loadEmbedded = sync.OnceValues(func() (*Contract, error) {
	spec, err := api.GetSpec()
	if err != nil {
		return nil, fmt.Errorf("load embedded spec: %w", err)
	}
	return New(spec)
})

// New compiles every schema of spec. It fails on a construct the validators do not handle
// (a parameter that is not a primitive, say) rather than let it pass unchecked later.
func New(spec *openapi3.T) (*Contract, error) {
	unmounted := *spec
	unmounted.Servers = nil // match on the path alone, wherever the server is mounted
	router, err := gorillamux.NewRouter(&unmounted)
	if err != nil {
		return nil, fmt.Errorf("build router: %w", err)
	}
	b, err := newBuilder(spec)
	if err != nil {
		return nil, err
	}
	c := &Contract{spec: spec, router: router, byRoute: map[route]*Operation{}, templates: map[string]string{}, unrouted: map[int]*response{}, notes: b.notes}
	for _, path := range spec.Paths.InMatchingOrder() {
		item := spec.Paths.Value(path)
		c.templates[EchoPath(path)] = path
		for method, op := range item.Operations() {
			at := "#/paths/" + escapePointer(path) + "/" + strings.ToLower(method)
			compiled, err := b.operation(item, op, "#/paths/"+escapePointer(path), at)
			if err != nil {
				return nil, fmt.Errorf("%s %s: %w", method, path, err)
			}
			c.byRoute[route{method, path}] = compiled
		}
	}
	if c.common, err = b.commonHeaders(spec); err != nil {
		return nil, err
	}
	if c.unrouted, err = b.unroutedResponses(spec); err != nil {
		return nil, err
	}
	return c, nil
}

// Spec is the loaded spec; callers must not change it.
func (c *Contract) Spec() *openapi3.T { return c.spec }

// AllowedMethods lists, sorted, the methods the spec defines on the request's path (HEAD and
// OPTIONS included, as operations like any other); none when no path matches.
func (c *Contract) AllowedMethods(req *http.Request) []string {
	for _, m := range []string{http.MethodOptions, http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		probe := req.Clone(req.Context())
		probe.Method = m
		if route, _, err := c.router.FindRoute(probe); err == nil {
			return slices.Sorted(maps.Keys(route.PathItem.Operations()))
		}
	}
	return nil
}

// builder compiles the schemas of one spec, all as fragments of the spec's JSON form, so
// their $refs resolve exactly as the document says. Everything it builds shares its notes.
type builder struct {
	compiler *jsonschema.Compiler
	notes    enumNotes
}

const specURL = "https://payments-api.invalid/openapi.json"

func newBuilder(spec *openapi3.T) (*builder, error) {
	raw, err := json.Marshal(spec)
	if err != nil {
		return nil, fmt.Errorf("marshal spec: %w", err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("read spec as JSON: %w", err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat() // date-time and the other known formats are checked, as the spec means them
	c.RegisterFormat(&jsonschema.Format{Name: "date-time", Validate: validateDateTime})
	if err := c.AddResource(specURL, doc); err != nil {
		return nil, err
	}
	return &builder{compiler: c, notes: newEnumNotes(spec)}, nil
}

// validateDateTime checks a date-time as the server reads it, with Go's RFC 3339 parser
// (time.RFC3339 takes any fraction of a second). That parser follows RFC 3339 but for two
// things the RFC allows, a leap second (23:59:60) and a lower-case t or z, which the library's
// own check accepts; checked here, they get the 400 naming their field that any other bad
// value gets, instead of failing in the generated binding after validation passed them.
// The parser also drops the digits of a fraction past the ninth (nanoseconds) without a word,
// so a bound of 12:00:00.0000010001 would be read as 12:00:00.000001 and select a row created
// at that microsecond, which lies before it: such a value is refused rather than misread.
func validateDateTime(v any) error {
	s, ok := v.(string)
	if !ok {
		return nil // the type keyword's business
	}
	if _, err := time.Parse(time.RFC3339, s); err != nil {
		return err
	}
	if fractionDigits(s) > 9 {
		return errors.New("more than nine digits of a second")
	}
	// Go's parser takes an offset's hours up to 24 and minutes up to 60 (+24:00, -00:60),
	// which RFC 3339 does not (time-numoffset: hours 00-23, minutes 00-59).
	if n := len(s); s[n-1] != 'Z' && (s[n-5:n-3] > "23" || s[n-2:] > "59") {
		return errors.New("an offset beyond 23:59")
	}
	return nil
}

// fractionDigits counts the digits of the fraction of a second in an RFC 3339 date-time:
// those after the point that follows the seconds, the only point the format has.
func fractionDigits(s string) int {
	_, fraction, ok := strings.Cut(s, ".")
	if !ok {
		return 0
	}
	n := 0
	for n < len(fraction) && fraction[n] >= '0' && fraction[n] <= '9' {
		n++
	}
	return n
}

// compile compiles the schema at pointer (a "#/..." fragment of the spec).
func (b *builder) compile(pointer string) (*jsonschema.Schema, error) {
	schemasCompiled.Add(1)
	s, err := b.compiler.Compile(specURL + pointer)
	if err != nil {
		return nil, fmt.Errorf("compile %s: %w", pointer, err)
	}
	return s, nil
}

// at is where a possibly referenced object lives: its $ref target, or where it is written.
func at(ref, written string) string {
	if ref != "" {
		return ref
	}
	return written
}

func (b *builder) operation(item *openapi3.PathItem, op *openapi3.Operation, itemAt, opAt string) (*Operation, error) {
	compiled := &Operation{id: op.OperationID, responses: map[string]*response{}, notes: b.notes}
	overridden := map[string]bool{}
	for i, ref := range op.Parameters {
		v, err := b.value(ref.Value.Name, ref.Value.In, ref.Value.Required, ref.Value.Schema, at(ref.Ref, fmt.Sprintf("%s/parameters/%d", opAt, i)))
		if err != nil {
			return nil, err
		}
		compiled.params = append(compiled.params, v)
		overridden[ref.Value.In+" "+ref.Value.Name] = true
	}
	for i, ref := range item.Parameters {
		if overridden[ref.Value.In+" "+ref.Value.Name] {
			continue
		}
		v, err := b.value(ref.Value.Name, ref.Value.In, ref.Value.Required, ref.Value.Schema, at(ref.Ref, fmt.Sprintf("%s/parameters/%d", itemAt, i)))
		if err != nil {
			return nil, err
		}
		compiled.params = append(compiled.params, v)
	}
	if rb := op.RequestBody; rb != nil {
		content, err := b.content(rb.Value.Content, at(rb.Ref, opAt+"/requestBody")+"/content")
		if err != nil {
			return nil, err
		}
		compiled.body = &requestBody{required: rb.Value.Required, media: content}
	}
	for status, ref := range op.Responses.Map() {
		r, err := b.response(ref, opAt+"/responses/"+status)
		if err != nil {
			return nil, fmt.Errorf("response %s: %w", status, err)
		}
		compiled.responses[status] = r
	}
	for _, field := range preconditionFields {
		declared := slices.ContainsFunc(compiled.params, func(v *value) bool { return v.in == "header" && v.field == field })
		if compiled.responses["400"] != nil && !declared {
			compiled.refused = append(compiled.refused, field)
		}
	}
	return compiled, nil
}

// value compiles a parameter or a header. Only primitives are supported: every parameter of
// the spec is one, and a new kind must fail here, not pass unvalidated.
func (b *builder) value(name, in string, required bool, schema *openapi3.SchemaRef, loc string) (*value, error) {
	if schema == nil || schema.Value == nil {
		return nil, fmt.Errorf("%s %s has no schema", in, name)
	}
	kind := "string"
	for _, k := range []string{"integer", "number", "boolean", "string"} {
		if schema.Value.Type.Is(k) {
			kind = k
		}
	}
	if t := schema.Value.Type; t != nil && len(t.Slice()) > 0 && !t.Is(kind) {
		return nil, fmt.Errorf("%s %s: only primitive types are supported, not %v", in, name, t.Slice())
	}
	compiled, err := b.compile(loc + "/schema")
	if err != nil {
		return nil, err
	}
	v := &value{name: name, in: in, required: required || in == openapi3.ParameterInPath, kind: kind, schema: compiled}
	if in == openapi3.ParameterInHeader {
		// Keyed as net/http stores it ("If-None-Match"), a header is read with one map
		// lookup: Header.Values would canonicalize its name again on every request.
		v.field = http.CanonicalHeaderKey(name)
	}
	if isPlainString(writtenSchema(schema)) {
		v.plain = newPlainString(compiled)
	}
	return v, nil
}

func (b *builder) content(content openapi3.Content, loc string) (map[string]*media, error) {
	compiled := map[string]*media{}
	for mt, m := range content {
		if m.Schema == nil {
			return nil, fmt.Errorf("media type %s has no schema", mt)
		}
		s, err := b.compile(loc + "/" + escapePointer(mt) + "/schema")
		if err != nil {
			return nil, err
		}
		// Keyed by the bare media type: the spec may write parameters (text/plain;
		// version=0.0.4) that a Content-Type repeats or not.
		base, _, err := mime.ParseMediaType(mt)
		if err != nil {
			return nil, fmt.Errorf("media type %s: %w", mt, err)
		}
		compiled[base] = &media{schema: s, asString: m.Schema.Value != nil && m.Schema.Value.Type.Is("string")}
	}
	return compiled, nil
}

func (b *builder) response(ref *openapi3.ResponseRef, written string) (*response, error) {
	loc := at(ref.Ref, written)
	r := &response{notes: b.notes}
	for _, name := range slices.Sorted(maps.Keys(ref.Value.Headers)) {
		h := ref.Value.Headers[name]
		v, err := b.value(name, openapi3.ParameterInHeader, h.Value.Required, h.Value.Schema, at(h.Ref, loc+"/headers/"+escapePointer(name)))
		if err != nil {
			return nil, err
		}
		r.headers = append(r.headers, v)
	}
	var err error
	r.media, err = b.content(ref.Value.Content, loc+"/content")
	return r, err
}

// commonHeadersExtension lists the headers any response may carry, each a $ref to
// components/headers, so they are described once instead of under every response.
const commonHeadersExtension = "x-common-response-headers"

// commonHeaders compiles the headers of the x-common-response-headers extension.
func (b *builder) commonHeaders(spec *openapi3.T) ([]*value, error) {
	raw, ok := spec.Extensions[commonHeadersExtension].(map[string]any)
	if !ok {
		return nil, nil
	}
	var common []*value
	for _, name := range slices.Sorted(maps.Keys(raw)) {
		entry, _ := raw[name].(map[string]any)
		ref, _ := entry["$ref"].(string)
		component, ok := strings.CutPrefix(ref, "#/components/headers/")
		h := spec.Components.Headers[component]
		if !ok || h == nil {
			return nil, fmt.Errorf("%s.%s: want a $ref to a header in components/headers, got %v", commonHeadersExtension, name, raw[name])
		}
		v, err := b.value(name, openapi3.ParameterInHeader, h.Value.Required, h.Value.Schema, ref)
		if err != nil {
			return nil, err
		}
		common = append(common, v)
	}
	return common, nil
}

// unroutedExtension names the responses to a request that matches no operation, by status:
// they belong to no operation, so the spec refers to them from this extension.
const unroutedExtension = "x-unrouted-responses"

// unroutedResponses compiles the 404 and 405 of the x-unrouted-responses extension.
func (b *builder) unroutedResponses(spec *openapi3.T) (map[int]*response, error) {
	raw, _ := spec.Extensions[unroutedExtension].(map[string]any)
	unrouted := map[int]*response{}
	for _, status := range []int{http.StatusNotFound, http.StatusMethodNotAllowed} {
		entry, _ := raw[strconv.Itoa(status)].(map[string]any)
		ref, _ := entry["$ref"].(string)
		name, ok := strings.CutPrefix(ref, "#/components/responses/")
		component := spec.Components.Responses[name]
		if !ok || component == nil {
			return nil, fmt.Errorf("%s.%d: want a $ref to a response in components/responses, got %v", unroutedExtension, status, raw[strconv.Itoa(status)])
		}
		r, err := b.response(&openapi3.ResponseRef{Ref: ref, Value: component.Value}, "")
		if err != nil {
			return nil, fmt.Errorf("%s.%d: %w", unroutedExtension, status, err)
		}
		unrouted[status] = r
	}
	return unrouted, nil
}

// parse converts a parameter's or header's text to the type its schema expects. ok is false
// when the text is not of that type; the schema then has nothing to check.
func (v *value) parse(s string) (any, bool) {
	switch v.kind {
	case "integer":
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return wholeNumber(s)
		}
		return n, true
	case "number":
		f, err := strconv.ParseFloat(s, 64)
		return f, err == nil
	case "boolean":
		b, err := strconv.ParseBool(s)
		return b, err == nil
	}
	return s, true
}

// escapePointer escapes a member name for a JSON pointer (RFC 6901).
func escapePointer(s string) string { return pointerEscaper.Replace(s) }

var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")
