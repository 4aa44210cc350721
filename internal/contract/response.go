package contract

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
)

// ValidateResponse checks a response against the spec: its status is documented for the
// request's operation, documented headers are present and valid, and the body is in a
// documented media type and matches its schema (a response that documents no body has
// none: HEAD's). A request no operation matches must have been answered with the response
// x-unrouted-responses gives for 404 or 405. An OPTIONS answered 204 must also list in Allow
// exactly the methods the spec gives the path. The tests' client calls it on every response
// it sees.
//
// Headers the spec lists under x-common-response-headers are checked on every response,
// whatever its operation: present if required, and matching their schemas.
func (c *Contract) ValidateResponse(req *http.Request, status int, header http.Header, body []byte) error {
	common := collector{notes: c.notes}
	checkHeaders(&common, c.common, header)
	if err := common.err(); err != nil {
		return fmt.Errorf("common response headers: %w", summarise(err))
	}
	return c.validateResponse(req, status, header, body)
}

func (c *Contract) validateResponse(req *http.Request, status int, header http.Header, body []byte) error {
	found, _, err := c.router.FindRoute(req)
	if err != nil {
		want := http.StatusNotFound
		if errors.Is(err, routers.ErrMethodNotAllowed) {
			want = http.StatusMethodNotAllowed
		}
		if status != want {
			return fmt.Errorf("no operation matches (%w), so the status must be %d", err, want)
		}
		// net/http sends no body in answer to HEAD, whatever the handler wrote.
		return c.unrouted[want].check(header, body, req.Method != http.MethodHead)
	}
	op := c.Operation(found.Method, found.Path)
	r := op.responses[strconv.Itoa(status)]
	if r == nil {
		r = op.responses["default"]
	}
	if r == nil {
		return fmt.Errorf("status %d is not documented for %s", status, op.id)
	}
	if err := r.check(header, body, true); err != nil {
		return err
	}
	if req.Method == http.MethodOptions && status == http.StatusNoContent {
		return checkAllow(header.Get("Allow"), slices.Collect(maps.Keys(found.PathItem.Operations())))
	}
	return nil
}

// checkAllow checks that an Allow header lists exactly methods, which no schema can say.
func checkAllow(allow string, methods []string) error {
	listed := strings.Split(allow, ",")
	for i := range listed {
		listed[i] = strings.TrimSpace(listed[i])
	}
	slices.Sort(listed)
	slices.Sort(methods)
	if !slices.Equal(listed, methods) {
		return fmt.Errorf("header Allow is %q, want the methods %v", allow, methods)
	}
	return nil
}

// check checks headers and, withBody, the body; without it (an answer to HEAD), only that
// the Content-Type is one the response documents.
func (r *response) check(header http.Header, body []byte, withBody bool) error {
	errs := collector{notes: r.notes}
	checkHeaders(&errs, r.headers, header)
	if !withBody {
		if ct := header.Get("Content-Type"); len(r.media) > 0 && r.media[mediaTypeOf(ct)] == nil {
			return fmt.Errorf("Content-Type %q is not documented", ct)
		}
	} else if err := r.checkBody(&errs, header.Get("Content-Type"), body); err != nil {
		return err
	}
	if err := errs.err(); err != nil {
		return summarise(err)
	}
	return nil
}

// checkHeaders checks each documented header of a response: present if required, sent once,
// and matching its schema.
func checkHeaders(errs *collector, documented []*value, header http.Header) {
	for _, h := range documented {
		values := header[h.field]
		if msg := h.check(values); msg != "" {
			errs.add(h.name, msg)
		} else if len(values) == 1 {
			v, _ := h.parse(values[0])
			if err := h.schema.Validate(v); err != nil {
				addSchemaErrors(errs, err, h.name, nil)
			}
		}
	}
}

// summarise writes a collector's *Error on one line, for a test's failure message.
func summarise(err error) error {
	var e *Error
	errors.As(err, &e)
	return fmt.Errorf("%v: %v (and %d more)", e.Summary, e.Fields, e.Omitted)
}

func (r *response) checkBody(errs *collector, contentType string, body []byte) error {
	if len(r.media) == 0 {
		if len(body) > 0 {
			return fmt.Errorf("the response has a %d-byte body where none is documented", len(body))
		}
		return nil
	}
	mt := mediaTypeOf(contentType)
	m := r.media[mt]
	if m == nil {
		return fmt.Errorf("Content-Type %q is not documented", contentType)
	}
	value, err := decodeResponse(mt, m, body)
	if err != nil {
		return fmt.Errorf("decode %s body: %w", mt, err)
	}
	if err := m.schema.Validate(value); err != nil {
		addSchemaErrors(errs, err, "", value)
	}
	return nil
}

// mediaTypeOf is a Content-Type's media type, lowercase; "" when it has none.
func mediaTypeOf(contentType string) string {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return ""
	}
	return mt
}

// decodeResponse reads a response body as its schema sees it: JSON decoded, text as a string.
func decodeResponse(mt string, m *media, body []byte) (any, error) {
	switch {
	case m.asString:
		return string(body), nil
	case mt == "application/json" || strings.HasSuffix(mt, "+json"):
		return parseJSON(body)
	case mt == "application/yaml":
		return openapi3filter.YamlBodyDecoder(bytes.NewReader(body), nil, nil, nil)
	default:
		return nil, fmt.Errorf("no decoder for %s", mt)
	}
}
