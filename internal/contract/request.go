package contract

import (
	"errors"
	"maps"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/getkin/kin-openapi/routers"
)

// Request is what validation learnt about a valid request.
type Request struct {
	OperationID string
	// MediaType is the body's media type, lowercase and without parameters; "" without a body.
	MediaType string
	// Body is the decoded body (json.Number for numbers, whole ones written as integers:
	// see wholeNumbers), nil without one.
	Body any
	// Query is the request's query with every integer parameter written as plain digits,
	// when one was written otherwise (limit=10.0 is limit=10), so that a binder that reads
	// only digits binds what the schema accepted; nil when nothing needed rewriting.
	Query url.Values
}

// ValidateRequest checks a request against its operation: route, parameters and headers,
// media type and body (raw, already read; the request's own Body is not touched). Its errors
// are ErrNoRoute, *MethodNotAllowedError, *MediaTypeError and *Error. The cost is linear in
// the request's size, and no schema is compiled.
func (c *Contract) ValidateRequest(req *http.Request, body []byte) (*Request, error) {
	found, pathParams, err := c.router.FindRoute(req)
	switch {
	case errors.Is(err, routers.ErrMethodNotAllowed):
		return nil, &MethodNotAllowedError{Allow: c.AllowedMethods(req)}
	case err != nil:
		return nil, ErrNoRoute
	}
	return c.Operation(found.Method, found.Path).Validate(req, paramMap(pathParams), body)
}

// PathParams are the path parameters a router matched, by name, as they appear in the
// request's path (still percent-encoded, when the router matched req.URL.RawPath). An
// echo.Context is one.
type PathParams interface {
	Param(name string) string
}

type paramMap map[string]string

func (m paramMap) Param(name string) string { return m[name] }

// Validate checks a request that a router matched to op, as ValidateRequest does, but for the
// route. The spec's {name} is one path segment, never empty: a router that matched a path
// parameter empty or across a slash (echo does, for /payments//x) matched no operation of the
// spec, so that is ErrNoRoute.
func (op *Operation) Validate(req *http.Request, pathParams PathParams, body []byte) (*Request, error) {
	for _, p := range op.params {
		if p.in != "path" {
			continue
		}
		if v := pathParams.Param(p.name); v == "" || strings.Contains(v, "/") {
			return nil, ErrNoRoute
		}
	}
	valid := &Request{OperationID: op.id}
	errs := collector{notes: op.notes}
	valid.Query = op.checkParams(&errs, req, pathParams)
	for _, field := range op.refused {
		if _, sent := req.Header[field]; sent {
			errs.add(field, "is not a precondition this operation evaluates: send the request without it")
		}
	}
	if op.body != nil && len(body) > 0 {
		// Indexed, not Get: "Content-Encoding" is canonical, and Get would canonicalize it again.
		if coding := req.Header["Content-Encoding"]; len(coding) > 0 && !strings.EqualFold(strings.Join(coding, ","), "identity") {
			// A compressed body read as JSON would be refused as not JSON; RFC 9110 has an
			// unsupported content coding answered 415.
			return nil, &MediaTypeError{Detail: "Send the body without a Content-Encoding: it is read as sent.", Accepted: op.body.accepted(), Encoding: true}
		}
		if len(req.Header["Content-Type"]) > 1 {
			// Which one describes the body? Get would take the first, silently.
			errs.add("Content-Type", "must be sent once")
			return nil, errs.err()
		}
		mt, err := op.body.mediaType(req.Header.Get("Content-Type"))
		if err != nil {
			return nil, err
		}
		valid.MediaType = mt
		if valid.Body, err = parseJSON(body); err != nil {
			return nil, err
		}
		if err := op.body.media[mt].schema.Validate(valid.Body); err != nil {
			addSchemaErrors(&errs, err, "", valid.Body)
		}
	} else if op.body != nil && op.body.required {
		errs.add("/", "a request body is required")
	}
	if err := errs.err(); err != nil {
		return nil, err
	}
	wholeNumbers(valid.Body)
	return valid, nil
}

// preconditionFields are the preconditions of RFC 9110 this server evaluates, on the
// operations that declare them. An operation refuses one it does not declare (Operation's
// refused): ignored, the condition would not stop the method, and a DELETE /account sent
// "only if" some tag matched would delete the account, a PATCH sent "only if none matched"
// would change the payment whose tag it named.
var preconditionFields = []string{"If-Match", "If-None-Match"}

// listFields are the header parameters whose value is a comma-separated list, which a client
// may send as one field line or as several: If-Match and If-None-Match (RFC 9110) and Prefer
// (RFC 7240). Any other parameter sent twice is refused.
var listFields = map[string]bool{"If-Match": true, "If-None-Match": true, "Prefer": true}

// checkParams checks every parameter the operation declares. Unknown query parameters are
// ignored, as HTTP APIs usually do. It returns the query rewritten as Request.Query says, or
// nil.
func (op *Operation) checkParams(errs *collector, req *http.Request, pathParams PathParams) (rewritten url.Values) {
	var query url.Values
	for _, p := range op.params {
		var values []string
		var one [1]string
		switch p.in {
		case "path":
			one[0] = pathParams.Param(p.name)
			if req.URL.RawPath != "" {
				// The router matched the path as sent (req.URL.RawPath is set only when it
				// holds an escape its decoding would not restore), so the parameter is still
				// escaped. An escaped character is the character (RFC 3986, section 6.2.2.2):
				// /payments/%70ay_1 is /payments/pay_1, as the generated binder reads it too.
				if v, err := url.PathUnescape(one[0]); err == nil {
					one[0] = v
				}
			}
			values = one[:]
		case "query":
			if query == nil {
				var err error
				if query, err = url.ParseQuery(req.URL.RawQuery); err != nil {
					malformedPairs(errs, req.URL.RawQuery)
				}
			}
			values = query[p.name]
		case "header":
			values = req.Header[p.field]
			if len(values) > 1 && listFields[p.field] {
				// Field lines of a list are one list, in order (RFC 9110, section 5.3): fold
				// them, in the request too, where the generated binder wants one line.
				req.Header[p.field] = []string{strings.Join(values, ", ")}
				values = req.Header[p.field]
			}
		}
		if msg := p.check(values); msg != "" {
			errs.add(p.name, msg)
		} else if len(values) == 1 {
			if p.plain != nil && p.plain.accepts(values[0]) {
				continue // valid, and known so without the validator: most requests' path IDs
			}
			if v, _ := p.parse(values[0]); v != nil {
				if err := p.schema.Validate(v); err != nil {
					addSchemaErrors(errs, err, p.name, nil)
				}
				if n, ok := v.(int64); ok && p.in == "query" {
					if digits := strconv.FormatInt(n, 10); digits != values[0] { // 10.0 → 10
						query[p.name] = []string{digits}
						rewritten = query
					}
				}
			}
		}
	}
	return rewritten
}

// malformedPairs adds an error for each pair of a query string that url.ParseQuery drops: a
// broken percent-escape, or a semicolon, which Go no longer reads as a separator. Dropped in
// silence, such a pair would be a filter that quietly does not apply (?status=failed%).
func malformedPairs(errs *collector, rawQuery string) {
	for pair := range strings.SplitSeq(rawQuery, "&") {
		key, value, _ := strings.Cut(pair, "=")
		name, keyErr := url.QueryUnescape(key)
		if keyErr != nil {
			name = key
		}
		_, valueErr := url.QueryUnescape(value)
		switch {
		case strings.Contains(pair, ";"):
			errs.add(name, "must not hold a semicolon: separate parameters with &")
		case keyErr != nil || valueErr != nil:
			errs.add(name, "must be percent-encoded: a % begins an escape such as %25")
		}
	}
}

// check says what is wrong with a parameter's values before its schema is consulted.
func (v *value) check(values []string) string {
	switch {
	case len(values) == 0:
		if v.required {
			return "is required"
		}
		return ""
	case len(values) > 1:
		return "must be sent once"
	case !utf8.ValidString(values[0]) || strings.ContainsRune(values[0], 0):
		return "must be UTF-8 text without the NUL character"
	case values[0] == "" && v.kind != "string":
		return "must not be empty"
	}
	if _, ok := v.parse(values[0]); !ok {
		return "must be " + article(v.kind)
	}
	return ""
}

// mediaType is the body's media type if the operation accepts it, lowercase. Any charset
// but UTF-8 is refused: the body is parsed as UTF-8, whatever it says.
func (b *requestBody) mediaType(contentType string) (string, error) {
	mt, params, err := mime.ParseMediaType(contentType)
	if err == nil && b.media[mt] != nil {
		if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") {
			return "", &MediaTypeError{Detail: "Send the body in UTF-8 (charset=utf-8, or no charset).", Accepted: b.accepted()}
		}
		return mt, nil
	}
	accepted := b.accepted()
	return "", &MediaTypeError{Detail: "Send the body as " + strings.Join(accepted, " or ") + ".", Accepted: accepted}
}

// accepted lists the media types the body may be sent in, sorted.
func (b *requestBody) accepted() []string {
	return slices.Sorted(maps.Keys(b.media))
}
