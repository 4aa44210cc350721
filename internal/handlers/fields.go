package handlers

import "net/http"

// The header fields that every request reads or every response carries, written as net/http
// keys a Header: canonical, as http.CanonicalHeaderKey writes them ("Etag", not "ETag").
// Header.Get and Header.Set canonicalize the name they are given on every call, a pass over
// each of its bytes (and a copy of "ETag"); the middleware and the GET's answer index the
// map with these instead. TestFieldNamesAreCanonical keeps them so: indexed with any other
// spelling, the map would find nothing.
const (
	fieldAuthorization = "Authorization"
	fieldContentType   = "Content-Type"
	fieldETag          = "Etag"
	fieldPrefer        = "Prefer"
	fieldRequestID     = "Request-Id"
	fieldServerTiming  = "Server-Timing"
)

// firstValue is h.Get(name) for a canonical name: the field's first value, or "".
func firstValue(h http.Header, name string) string {
	if v := h[name]; len(v) > 0 {
		return v[0]
	}
	return ""
}
