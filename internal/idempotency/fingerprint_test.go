package idempotency

import (
	"bytes"
	"encoding/json"
	"math/big"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCanonicalizeEqualDocuments(t *testing.T) {
	tests := []struct{ a, b string }{
		{`{"amount":5000,"currency":"usd"}`, `{ "currency" : "usd",  "amount" : 5000 }`},
		{`{"a":{"y":1,"x":2}}`, "{\n\t\"a\": {\"x\": 2, \"y\": 1}\n}"},
		{`{"amount":5000}`, `{"amount":5e3}`},
		{`{"amount":5000}`, `{"amount":5000.000}`},
		{`{"amount":5000}`, `{"amount":50E2}`},
		// JSON Schema integers however written: the contract binds them all as 2500.
		{`{"amount":2500}`, `{"amount":2500.0}`},
		{`{"amount":2500}`, `{"amount":25e2}`},
		{`{"amount":2500}`, `{"amount":2.5E3}`},
		{`{"amount":2500}`, `{"amount":25000e-1}`},
		{`{"n":0}`, `{"n":-0.0}`},
		{`{"n":0.5}`, `{"n":5e-1}`},
		{`{"s":"A\u00e9/"}`, `{"s":"\u0041é\/"}`},
		{`[1,"x",null,true]`, ` [ 1 , "x" , null , true ] `},
	}
	for _, tt := range tests {
		ca, errA := canonicalize([]byte(tt.a))
		cb, errB := canonicalize([]byte(tt.b))
		if errA != nil || errB != nil || !bytes.Equal(ca, cb) {
			t.Errorf("%s and %s: canonical %s (%v) vs %s (%v)", tt.a, tt.b, ca, errA, cb, errB)
		}
	}
}

func TestCanonicalizeDifferentDocuments(t *testing.T) {
	tests := []struct{ a, b string }{
		{`{"amount":5000}`, `{"amount":5001}`},
		{`{"amount":2500}`, `{"amount":2500.5}`},
		{`{"amount":9007199254740993}`, `{"amount":9007199254740992}`}, // equal as float64
		{`{"amount":1}`, `{"amount":"1"}`},
		{`[1,2]`, `[2,1]`},
		{`{"a":null}`, `{}`},
		{`{"a":{"b":1}}`, `{"a.b":1}`},
		{`{"n":0.1}`, `{"n":0.10000000000000001}`}, // equal as float64
	}
	for _, tt := range tests {
		ca, _ := canonicalize([]byte(tt.a))
		cb, _ := canonicalize([]byte(tt.b))
		if bytes.Equal(ca, cb) {
			t.Errorf("%s and %s both canonicalize to %s", tt.a, tt.b, ca)
		}
	}
}

func TestCanonicalizeRejects(t *testing.T) {
	for _, doc := range []string{
		`{"amount":1,"amount":2}`, // duplicate member: parsers disagree on which wins
		`{"a":{"b":1,"b":1}}`,
		`{"a":1} {"b":2}`,
		`{"a":`,
		"{\"a\":\"\xff\"}", // not UTF-8
		`{"n":1e99999999999}`,
		``,
	} {
		if c, err := canonicalize([]byte(doc)); err == nil {
			t.Errorf("canonicalize(%q) = %s, want an error", doc, c)
		}
	}
}

// TestWriteStringAsEncodingJSON holds the shortcut for strings without escapes to the bytes
// encoding/json writes, of which stored fingerprints were made: every ASCII character alone
// and inside a word, and some beyond ASCII.
func TestWriteStringAsEncodingJSON(t *testing.T) {
	strs := []string{"", "pm_card_visa", "é", "\u2028", "a\xffb", "<&>"}
	for c := range utf8.RuneSelf {
		strs = append(strs, string(rune(c)), "a"+string(rune(c))+"z")
	}
	for _, s := range strs {
		var got, want bytes.Buffer
		writeString(&got, s)
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(s); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Bytes(), bytes.TrimSuffix(want.Bytes(), []byte("\n"))) {
			t.Errorf("writeString(%q) = %s, encoding/json writes %s", s, got.Bytes(), want.Bytes())
		}
	}
}

// BenchmarkFingerprint measures the fingerprint of a typical POST /payments body, decoded as
// the contract hands it over.
func BenchmarkFingerprint(b *testing.B) {
	body, err := Decode([]byte(`{"amount":2500,"currency":"usd","payment_method":"pm_card_visa","description":"Order 1234","metadata":{"order_id":"1234","customer":"c_42"}}`))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Fingerprint("payments.create", body); err != nil {
			b.Fatal(err)
		}
	}
}

func TestFingerprintSeparatesOperations(t *testing.T) {
	body := map[string]any{"amount": json.Number("100")}
	a, _ := Fingerprint("payments.create", body)
	b, _ := Fingerprint("refunds.create", body)
	if bytes.Equal(a, b) {
		t.Error("the same body under two operations must not share a fingerprint")
	}
}

// TestFingerprintOnResource: the id in the path is part of the request, beside the body, and
// a request without a body (a rotation, say) still names its resource.
func TestFingerprintOnResource(t *testing.T) {
	body := map[string]any{"description": "x"}
	a, _ := Fingerprint("payments.update", OnResource("pay_1", body))
	b, _ := Fingerprint("payments.update", OnResource("pay_2", body))
	again, _ := Fingerprint("payments.update", OnResource("pay_1", map[string]any{"description": "x"}))
	if bytes.Equal(a, b) || !bytes.Equal(a, again) {
		t.Error("the same body on two payments must differ, and on one payment must not")
	}
	c, _ := Fingerprint("rotate", OnResource("we_1", nil))
	d, _ := Fingerprint("rotate", OnResource("we_2", nil))
	if bytes.Equal(c, d) {
		t.Error("two resources without a body must not share a fingerprint")
	}
}

// FuzzCanonicalize checks the fingerprint's two promises on arbitrary input: equal
// documents canonicalize equally (however they are spaced), and documents that differ in
// any value (compared exactly, numbers as rationals) canonicalize differently.
func FuzzCanonicalize(f *testing.F) {
	for _, seed := range []string{
		`{"amount":5000,"currency":"usd"}`, `{"amount":5e3,"currency":"usd"}`,
		`{"a":[1,2,{"b":null}],"c":"\u00e9"}`, `[0.1,-0,1E-7]`, `"x"`, `{"a":{"a":{}}}`,
	} {
		f.Add(seed, `{"amount":5000}`)
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		ca, errA := canonicalize([]byte(a))
		if errA != nil {
			return
		}
		// Canonical form is a fixed point, and whitespace does not matter.
		if again, err := canonicalize(ca); err != nil || !bytes.Equal(again, ca) {
			t.Fatalf("not a fixed point: %s -> %s (%v)", ca, again, err)
		}
		var indented bytes.Buffer
		if err := json.Indent(&indented, []byte(a), "", "  "); err == nil {
			if ci, err := canonicalize(indented.Bytes()); err != nil || !bytes.Equal(ci, ca) {
				t.Fatalf("re-spacing changed the canonical form: %s vs %s", ci, ca)
			}
		}
		cb, errB := canonicalize([]byte(b))
		if errB != nil {
			return
		}
		va, okA := decodeExact(a)
		vb, okB := decodeExact(b)
		if !okA || !okB {
			return
		}
		if same := bytes.Equal(ca, cb); same != equalExact(va, vb) {
			t.Fatalf("%q and %q: canonical equal = %v, exactly equal = %v", a, b, same, !same)
		}
	})
}

var hugeExponent = regexp.MustCompile(`[eE][+-]?0*[0-9]{4,}`)

// decodeExact is an independent reference: encoding/json with numbers kept as text.
func decodeExact(doc string) (any, bool) {
	if hugeExponent.MatchString(doc) {
		return nil, false // big.Rat would expand 1e99999 digit by digit
	}
	dec := json.NewDecoder(strings.NewReader(doc))
	dec.UseNumber()
	var v any
	return v, dec.Decode(&v) == nil
}

func equalExact(a, b any) bool {
	switch a := a.(type) {
	case map[string]any:
		b, ok := b.(map[string]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for k, va := range a {
			vb, ok := b[k]
			if !ok || !equalExact(va, vb) {
				return false
			}
		}
		return true
	case []any:
		b, ok := b.([]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for i := range a {
			if !equalExact(a[i], b[i]) {
				return false
			}
		}
		return true
	case json.Number:
		b, ok := b.(json.Number)
		if !ok {
			return false
		}
		ra, okA := new(big.Rat).SetString(string(a))
		rb, okB := new(big.Rat).SetString(string(b))
		return okA && okB && ra.Cmp(rb) == 0
	default:
		return a == b
	}
}
