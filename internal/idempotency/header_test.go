package idempotency

import (
	"encoding/json"
	"maps"
	"testing"
)

// FuzzStoredHeadersReplayAsTheyWere: the header fields a create stores come back from replay's
// decoding as they were, whatever their names and values.
func FuzzStoredHeadersReplayAsTheyWere(f *testing.F) {
	f.Add("Location", "/payments/pay_1", "Etag", `"v1"`)
	f.Add("Content-Type", "application/json", "X-Odd", "<tab\t\"quote\" \\ Zoë \u2028 \xff>")
	f.Add("", "", "a", "")
	f.Fuzz(func(t *testing.T, n1, v1, n2, v2 string) {
		h := map[string]string{n1: v1, n2: v2}
		var got map[string]string
		if err := json.Unmarshal(encodeHeader(h), &got); err != nil {
			t.Fatalf("%q: %v", encodeHeader(h), err)
		}
		if want := decodeAsJSON(t, h); !maps.Equal(got, want) {
			t.Errorf("stored %q, replayed %q, want %q", encodeHeader(h), got, want)
		}
	})
}

// decodeAsJSON is h after a round trip through encoding/json, which turns invalid UTF-8
// into U+FFFD as encodeHeader's encoding does.
func decodeAsJSON(t *testing.T, h map[string]string) map[string]string {
	t.Helper()
	b, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	var back map[string]string
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	return back
}

// TestStoredHeadersAreJSONsObject: for the fields a create stores, the bytes are
// json.Marshal's, as rows stored before encodeHeader hold them; no fields stay null.
func TestStoredHeadersAreJSONsObject(t *testing.T) {
	h := map[string]string{"Location": "/payments/pay_1", "Etag": `"v1"`, "Content-Type": "application/json"}
	want, _ := json.Marshal(h)
	if got := encodeHeader(h); string(got) != string(want) {
		t.Errorf("encodeHeader: %s, json.Marshal: %s", got, want)
	}
	if got := encodeHeader(nil); string(got) != "null" {
		t.Errorf("encodeHeader(nil): %s", got)
	}
}
