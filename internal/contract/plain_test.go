package contract

import (
	"context"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

// plainParams are the parameters of the spec that plainString checks, by operation and name.
func plainParams(t testing.TB) map[string]*value {
	t.Helper()
	found := map[string]*value{}
	for r, op := range load(t).byRoute {
		for _, p := range op.params {
			if p.plain != nil {
				found[r.method+" "+r.path+" "+p.in+" "+p.name] = p
			}
		}
	}
	return found
}

// TestPlainStringsSkipTheValidator: the payment ID of GET /payments/{id}, a plain string with
// a pattern and a maxLength, is checked without the validator; GET /payments' status (a $ref
// to an enum) and limit (an integer) are not. If the spec's JSON form grew a keyword, the
// fast path would turn itself off silently; this says so.
func TestPlainStringsSkipTheValidator(t *testing.T) {
	params := plainParams(t)
	id := params["GET /payments/{id} path id"]
	if id == nil || id.plain.pattern == nil || id.plain.maxLength != 64 {
		t.Fatalf("GET /payments/{id}'s id: plain check %+v, want one with its pattern and maxLength 64", id)
	}
	if id.plain.fast == nil {
		t.Errorf("GET /payments/{id}'s id: its pattern %s is matched by the regexp engine, want classPattern", id.plain.pattern)
	}
	for name, p := range params {
		if p.kind != "string" {
			t.Errorf("%s: a %s has a plain string's check", name, p.kind)
		}
	}
	seen := 0
	for _, p := range load(t).Operation("GET", "/payments").params {
		if p.name == "status" || p.name == "limit" {
			seen++
			if p.plain != nil {
				t.Errorf("GET /payments' %s has a plain string's check", p.name)
			}
		}
	}
	if seen != 2 {
		t.Errorf("GET /payments: found %d of its parameters status and limit, want 2", seen)
	}
}

// TestPlainStringsAgreeWithTheValidator: for every plain parameter of the spec, on values at
// and around its bounds and its pattern, the check accepts exactly what the validator does.
func TestPlainStringsAgreeWithTheValidator(t *testing.T) {
	for name, p := range plainParams(t) {
		for _, s := range plainCandidates(p.plain) {
			accepted, valid := p.plain.accepts(s), p.schema.Validate(s) == nil
			if accepted != valid {
				t.Errorf("%s: %q (%d characters): check says %v, validator says %v", name, s, len([]rune(s)), accepted, valid)
			}
		}
	}
}

// FuzzPlainStrings: on any string, every plain parameter's check and the validator agree.
func FuzzPlainStrings(f *testing.F) {
	for _, s := range []string{"pay_abc", "", "pay_", "pay_é", strings.Repeat("a", 70), "PAY_x", `"abc"`, `"a\"b"`, `"`, "k\x7f"} {
		f.Add(s)
	}
	params := plainParams(f)
	f.Fuzz(func(t *testing.T, s string) {
		for name, p := range params {
			if accepted, valid := p.plain.accepts(s), p.schema.Validate(s) == nil; accepted != valid {
				t.Errorf("%s, %q: check says %v, validator says %v", name, s, accepted, valid)
			}
		}
	})
}

// plainCandidates are values on both sides of a plain check's bounds, in one-byte and
// multi-byte characters (lengths count characters), with and without the pattern's prefix.
func plainCandidates(p *plainString) []string {
	out := []string{"", "a", "pay_abc", "pay_", "PAY_abc", "pay_ab-c", " pay_abc", "pay_abc\n", "ref_1", "re_1", "rep_1", "job_1", "we_1", "evt_1",
		`"abc"`, `"a\"b"`, `"a\\b"`, `"a\b"`, `"`, `""`, `a"b`, "~", "\x7f", "k\x7f", "\tk"}
	lengths := []int{0, 1, p.minLength - 1, p.minLength, p.minLength + 1}
	if p.maxLength >= 0 {
		lengths = append(lengths, p.maxLength-1, p.maxLength, p.maxLength+1)
	}
	for _, n := range lengths {
		if n < 0 {
			continue
		}
		for _, unit := range []string{"a", "é", "7", " "} {
			out = append(out, strings.Repeat(unit, n))
			for _, prefix := range []string{"pay_", "re_", "rep_", "job_", "we_", "evt_"} {
				if n > len(prefix) {
					out = append(out, prefix+strings.Repeat(unit, n-len(prefix)))
				}
			}
		}
	}
	return out
}

// TestAPaymentIDIsValidatedWithoutAllocating: validating GET /payments/{id} with a valid ID
// allocates at most twice, the validated request among them; through the validator it was
// eight times, for the boxed ID and the validator's own state.
func TestAPaymentIDIsValidatedWithoutAllocating(t *testing.T) {
	op := load(t).Operation("GET", "/payments/{id}")
	req := httptest.NewRequestWithContext(context.Background(), "GET", "/payments/pay_abc", nil)
	params := paramMap{"id": "pay_abc"}
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := op.Validate(req, params, nil); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 2 {
		t.Errorf("validating GET /payments/pay_abc allocates %.0f times, want at most 2", allocs)
	}
}

// TestClassPatternAgreesWithRegexp: newClassPattern takes the alternatives of its shape and
// leaves every other pattern to the regexp. On patterns where no class is followed by one it
// overlaps, it matches exactly what Go's regexp matches; on any other, whatever it matches the
// regexp matches too. The spec's own patterns are covered by TestPlainStringsAgreeWithTheValidator
// and FuzzPlainStrings.
func TestClassPatternAgreesWithRegexp(t *testing.T) {
	exact := []string{
		`^pay_[A-Za-z0-9]+$`, `^a[b-d]*$`, `^x_[a-z-]+$`, `^evt_[0-9]+$`, `^[a-z-]{1,4}$`, `^a?b{2,3}c*$`,
		`^whsec_[A-Za-z0-9+/]+={0,2}$`, `^(?:ab+|x{2})$`,
	}
	greedy := []string{`^[a-z]+z$`, `^a*ab$`, `^(?:[a-z]{1,3}|[a-z]+)$`}
	left := []string{
		`^pay_[A-Za-z0-9]+`,       // no end anchor
		`^pay_[a-z]+x`,            // a literal where the end anchor goes
		`pay_[A-Za-z0-9]+$`,       // no start anchor
		`(?i)^pay_[a-z]+$`,        // a case-folded prefix
		`^pay_[a-zé]+$`,           // a class beyond ASCII
		`^payé_[a-z]+$`,           // a prefix beyond ASCII
		`^pay_[a-z]+|^re_[a-z]+$`, // an alternation of unanchored halves
		`^pay_[^a-z]+$`,           // a negated class, which admits every other rune
		`^(pay)_[a-z]+$`,          // a capture
		`^pay_.+$`,                // any character
		`^(?:ab)+$`,               // a repeat of more than one character
		`^(?:pay|re)_[a-z]+$`,     // an alternation inside a sequence
		`^pay_(`,                  // no pattern at all
	}
	for _, pattern := range left {
		if newClassPattern(pattern) != nil {
			t.Errorf("%s: taken, want it left to the regexp", pattern)
		}
	}
	inputs := []string{"", "pay_", "pay_a", "pay_abc9", "pay_ab-c", "pay_abc\n", "\npay_abc", "PAY_abc", "pay_é", "a", "ab", "abb",
		"abbb", "abbbb", "abbc", "abd", "abe", "abz", "aab", "xx", "xxx", "zz", "z", "abcz", "x_", "x_a-b", "x_A", "evt_", "evt_0", "evt_0x",
		" pay_abc", "pay_abc ", "pay_pay_abc", "pay_\x00", "pay_\xff", "re_a", "re_", "a-b", "abcde", "whsec_ab+/=", "whsec_ab===",
		"whsec_=", "bb", "bbbb"}
	check := func(pattern string, exact bool) {
		m := newClassPattern(pattern)
		if m == nil {
			t.Errorf("%s: left to the regexp, want it taken", pattern)
			return
		}
		re := regexp.MustCompile(pattern)
		for _, s := range inputs {
			got, want := m.matches(s), re.MatchString(s)
			if got && !want || exact && got != want {
				t.Errorf("%s on %q: %v, the regexp says %v", pattern, s, got, want)
			}
		}
	}
	for _, pattern := range exact {
		check(pattern, true)
	}
	for _, pattern := range greedy {
		check(pattern, false)
	}
	// What greedy matching misses, the regexp finds: accepts asks it.
	if m := newClassPattern(`^[a-z]+z$`); m.matches("abz") {
		t.Errorf("^[a-z]+z$ matched abz greedily, which leaves no z for the end")
	}
}

// TestIdempotencyKeysSkipTheRegexp: the bare Idempotency-Key, what nearly every client sends
// (a UUID, say), is matched by classPattern; the quoted form, which the shape cannot hold,
// still by the regexp, and both are accepted.
func TestIdempotencyKeysSkipTheRegexp(t *testing.T) {
	key := plainParams(t)["POST /payments header Idempotency-Key"]
	if key == nil || key.plain.fast == nil {
		t.Fatalf("POST /payments' Idempotency-Key: plain check %+v, want one with a classPattern", key)
	}
	for _, s := range []string{"3f2b8c1e-4a5d-4e6f-8a7b-9c0d1e2f3a4b", "a", "order 42 ~retry!", strings.Repeat("k", 255)} {
		if !key.plain.fast.matches(s) || !key.plain.accepts(s) {
			t.Errorf("%q: matched %v, accepted %v; want both", s, key.plain.fast.matches(s), key.plain.accepts(s))
		}
	}
	for _, s := range []string{`"abc"`, `"a\"b"`} {
		if key.plain.fast.matches(s) || !key.plain.accepts(s) {
			t.Errorf("%q: matched %v, accepted %v; want it left to the regexp, which accepts it", s, key.plain.fast.matches(s), key.plain.accepts(s))
		}
	}
	for _, s := range []string{`"`, `"abc`, strings.Repeat("k", 256), "k\x7f", "ké"} {
		if key.plain.accepts(s) {
			t.Errorf("%q: accepted, want it refused", s)
		}
	}
}

// TestIdempotencyKeysAreOneSchema: an optional Idempotency-Key writes out the required one's
// schema (a $ref would not be a plain string's); every operation must take one key syntax.
func TestIdempotencyKeysAreOneSchema(t *testing.T) {
	params := plainParams(t)
	want := params["POST /payments header Idempotency-Key"]
	if want == nil || params["PATCH /payments/{id} header Idempotency-Key"] == nil {
		t.Fatal("POST /payments' or PATCH /payments/{id}'s Idempotency-Key has no plain check")
	}
	for op, p := range params {
		if p.name == "Idempotency-Key" && (p.plain.pattern.String() != want.plain.pattern.String() ||
			p.plain.minLength != want.plain.minLength || p.plain.maxLength != want.plain.maxLength) {
			t.Errorf("%s: pattern %s, length %d-%d; POST /payments has %s, %d-%d", op,
				p.plain.pattern, p.plain.minLength, p.plain.maxLength, want.plain.pattern, want.plain.minLength, want.plain.maxLength)
		}
	}
}
