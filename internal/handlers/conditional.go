package handlers

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/payments-api/payments-api/internal/domain"
	"github.com/payments-api/payments-api/internal/trace"
)

// etag is the strong entity tag of a versioned resource. The version changes with every
// write, so the tag changes exactly when the representation does.
func etag(version int32) string { return `"` + opaqueTag(version) + `"` }

func opaqueTag(version int32) string { return "v" + strconv.FormatInt(int64(version), 10) }

// entityTag is one element of an If-Match / If-None-Match list.
type entityTag struct {
	weak   bool
	opaque string // between the quotes
}

// entityTagMessage is the one explanation of the syntax a malformed header gets.
const entityTagMessage = `must be * or a comma-separated list of entity tags, each in double quotes: "v3" or W/"v3"`

// parseEntityTags parses an If-Match or If-None-Match value (RFC 9110 §13.1.1, §8.8.3):
// "*", or a list of entity tags `"opaque"` / `W/"opaque"`. A value that is neither (a bare
// v3, ""v3"", garbage, or nothing at all) is a client error naming the header: guessing what
// it meant would turn a typo into a 412 that blames a concurrent writer.
func parseEntityTags(header, value string) (tags []entityTag, any bool, err error) {
	if strings.TrimSpace(value) == "*" {
		return nil, true, nil
	}
	// Scanned, not split on commas: an opaque tag may hold a comma ("a,b"). Empty list
	// elements (", ,") are allowed by RFC 9110's list syntax and skipped.
	rest := value
	for {
		rest = strings.TrimLeft(rest, " \t")
		if rest == "" {
			break
		}
		if rest[0] == ',' {
			rest = rest[1:]
			continue
		}
		tag, n := scanEntityTag(rest)
		if n == 0 {
			return nil, false, &domain.ValidationError{Field: header, Message: entityTagMessage}
		}
		tags = append(tags, tag)
		rest = strings.TrimLeft(rest[n:], " \t")
		if rest != "" && rest[0] != ',' {
			return nil, false, &domain.ValidationError{Field: header, Message: entityTagMessage}
		}
	}
	if len(tags) == 0 {
		return nil, false, &domain.ValidationError{Field: header, Message: entityTagMessage}
	}
	return tags, false, nil
}

// scanEntityTag reads one entity-tag at the start of s and returns it and its length, or a
// length of 0 when s does not start with one. etagc is %x21 / %x23-7E / obs-text: any byte
// but controls, space, DEL and the double quote. (The request's validation has already
// refused a header that is not UTF-8, so obs-text arrives here as UTF-8 text only.)
func scanEntityTag(s string) (entityTag, int) {
	var tag entityTag
	start := 0
	if strings.HasPrefix(s, "W/") {
		tag.weak, start = true, 2
	}
	if len(s) <= start || s[start] != '"' {
		return entityTag{}, 0
	}
	for i := start + 1; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"':
			tag.opaque = s[start+1 : i]
			return tag, i + 1
		case c == 0x21 || (c >= 0x23 && c <= 0x7E) || c >= 0x80:
		default:
			return entityTag{}, 0
		}
	}
	return entityTag{}, 0 // no closing quote
}

// requiredIfMatch is the If-Match of an update, which must carry one: absent is 428
// Precondition Required, so an update never overwrites a change its sender has not seen.
func requiredIfMatch(ctx context.Context, value *string) (domain.Precondition, error) {
	if value == nil {
		return domain.Precondition{}, traceIfMatch(ctx, domain.ErrPreconditionRequired)
	}
	return ifMatch(*value)
}

// optionalIfMatch is the If-Match of a change that may carry one (a delete, a rotation): nil
// when it carries none. RFC 9110 has a server that issues ETags evaluate the precondition it
// is sent before acting.
func optionalIfMatch(value *string) (*domain.Precondition, error) {
	if value == nil {
		return nil, nil
	}
	pre, err := ifMatch(*value)
	if err != nil {
		return nil, err
	}
	return &pre, nil
}

// ifMatch turns If-Match into a precondition with RFC 9110's strong comparison: the opaque
// tags must be equal byte for byte and neither may be weak. A tag is kept as the version it
// names only when it is exactly the tag this server issues for that version, so "v01" or
// "v+1" never match "v1", and a weak W/"v3" never matches anything.
func ifMatch(value string) (domain.Precondition, error) {
	tags, any, err := parseEntityTags("If-Match", value)
	if err != nil {
		return domain.Precondition{}, err
	}
	pre := domain.Precondition{Any: any, Versions: []int32{}}
	for _, t := range tags {
		if v, ok := versionOf(t.opaque); ok && !t.weak {
			pre.Versions = append(pre.Versions, v)
		}
	}
	return pre, nil
}

// ifNoneMatch reports whether If-None-Match matches the current entity tag, given by its
// opaque part, with RFC 9110's weak comparison: W/"v3" matches "v3", the opaque tags still
// compared byte for byte.
func ifNoneMatch(value, current string) (bool, error) {
	tags, any, err := parseEntityTags("If-None-Match", value)
	if err != nil || any {
		return any, err
	}
	for _, t := range tags {
		if t.opaque == current {
			return true, nil
		}
	}
	return false, nil
}

// versionOf reads the version an opaque tag names, if it is one this server would issue.
func versionOf(opaque string) (int32, bool) {
	digits, ok := strings.CutPrefix(opaque, "v")
	if !ok {
		return 0, false
	}
	v, err := strconv.ParseInt(digits, 10, 32)
	if err != nil || opaqueTag(int32(v)) != opaque {
		return 0, false // "v01", "v+1": not byte for byte the tag of any version
	}
	return int32(v), true
}

// readIfMatch evaluates an If-Match sent with a read (RFC 9110 section 13.1.1: an origin
// server evaluates it before any method) against the resource's current version: a
// *domain.PreconditionFailedError, a 412, when it matches none of the tags.
func readIfMatch(ctx context.Context, value string, current int32) error {
	pre, err := ifMatch(value)
	if err != nil {
		return err
	}
	if !pre.Matches(current) {
		err = &domain.PreconditionFailedError{CurrentVersion: current}
	}
	return traceIfMatch(ctx, err)
}

// checkIfNoneMatch evaluates If-None-Match against the current version and records the decision.
func checkIfNoneMatch(ctx context.Context, value string, version int32) (bool, error) {
	notModified, err := ifNoneMatch(value, opaqueTag(version))
	if err == nil {
		traceIfNoneMatch(ctx, notModified)
	}
	return notModified, err
}

// traceIfMatch records in the request's trace what became of a conditional write, and
// returns err: matched (the write ran), stale (412), missing (428).
func traceIfMatch(ctx context.Context, err error) error {
	var stale *domain.PreconditionFailedError
	var staleTag *staleTagError // a report's
	switch {
	case err == nil:
		trace.Decide(ctx, trace.ETag, "matched")
	case errors.As(err, &stale), errors.As(err, &staleTag):
		trace.Decide(ctx, trace.ETag, "stale")
	case errors.Is(err, domain.ErrPreconditionRequired):
		trace.Decide(ctx, trace.ETag, "missing")
	}
	return err
}

// traceIfNoneMatch records whether a conditional read answered 304.
func traceIfNoneMatch(ctx context.Context, notModified bool) {
	decision := "modified"
	if notModified {
		decision = "not_modified"
	}
	trace.Decide(ctx, trace.ETag, decision)
}

// notModified is every conditional read's 304, carrying the resource's current ETag. It
// writes the ETag under the name net/http keys a Header by (fields.go), as encodedPayment
// writes a 200's, where the generated 304 types format each field with fmt.Sprint and have
// net/http canonicalize "ETag" on every call: a polling client's path is the one taken most.
// Request-Id is the timingWriter's, as on every answer.
type notModified string

func (tag notModified) VisitGetPaymentResponse(w http.ResponseWriter) error { return tag.write(w) }

func (tag notModified) VisitGetWebhookEndpointResponse(w http.ResponseWriter) error {
	return tag.write(w)
}

func (tag notModified) VisitDownloadReportResponse(w http.ResponseWriter) error {
	return tag.write(w)
}

func (tag notModified) write(w http.ResponseWriter) error {
	w.Header()[fieldETag] = []string{string(tag)}
	w.WriteHeader(http.StatusNotModified)
	return nil
}
