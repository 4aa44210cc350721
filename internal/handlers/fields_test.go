package handlers

import (
	"net/http"
	"testing"
)

// A name that is not canonical would index nothing in a Header: the request's field would
// read as absent, and a response would carry the field twice after a Header.Set of it.
func TestFieldNamesAreCanonical(t *testing.T) {
	for _, name := range []string{fieldAuthorization, fieldContentType, fieldETag, fieldPrefer, fieldRequestID, fieldServerTiming} {
		if canonical := http.CanonicalHeaderKey(name); name != canonical {
			t.Errorf("%q is not canonical: net/http keys it %q", name, canonical)
		}
	}
}
