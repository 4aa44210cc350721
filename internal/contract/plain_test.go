package contract

import (
	"context"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

// plainParams are the parameters of the spec that plainString checks, by operation and name.
func plainParams(t *testing.T) map[string]*value {
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
		t.Errorf("GET /payments/{id}'s id: its pattern %s is matched by the regexp engine, want prefixClass", id.plain.pattern)
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

// FuzzPlainPaymentID: on any string, the payment ID's plain check and the validator agree.
func FuzzPlainPaymentID(f *testing.F) {
	for _, s := range []string{"pay_abc", "", "pay_", "pay_é", strings.Repeat("a", 70), "PAY_x"} {
		f.Add(s)
	}
	p := load(f).Operation("GET", "/payments/{id}").params
	var id *value
	for _, v := range p {
		if v.name == "id" {
			id = v
		}
	}
	f.Fuzz(func(t *testing.T, s string) {
		if accepted, valid := id.plain.accepts(s), id.schema.Validate(s) == nil; accepted != valid {
			t.Errorf("%q: check says %v, validator says %v", s, accepted, valid)
		}
	})
}

// plainCandidates are values on both sides of a plain check's bounds, in one-byte and
// multi-byte characters (lengths count characters), with and without the pattern's prefix.
func plainCandidates(p *plainString) []string {
	out := []string{"", "a", "pay_abc", "pay_", "PAY_abc", "pay_ab-c", " pay_abc", "pay_abc\n", "ref_1", "re_1", "rep_1", "job_1", "we_1", "evt_1"}
	lengths := []int{0, 1, p.minLength - 1, p.minLength, p.minLength + 1}
	if p.maxLength >= 0 {
		lengths = append(lengths, p.maxLength-1, p.maxLength, p.maxLength+1)
	}
	for _, n := range lengths {
		if n < 0 {
			continue
		}
		for _, unit := range []string{"a", "é", "7"} {
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

// TestPrefixClassAgreesWithRegexp: newPrefixClass takes exactly the patterns of its shape, and
// on each it matches what Go's regexp matches. The spec's own patterns are covered too, by
// TestPlainStringsAgreeWithTheValidator and FuzzPlainPaymentID.
func TestPrefixClassAgreesWithRegexp(t *testing.T) {
	taken := []string{`^pay_[A-Za-z0-9]+$`, `^a[b-d]*$`, `^x_[a-z-]+$`, `^evt_[0-9]+$`}
	left := []string{
		`^[a-z-]{1,64}$`,               // a counted repeat
		`^pay_[A-Za-z0-9]+`,            // no end anchor
		`^pay_[a-z]+x`,                 // a literal where the end anchor goes
		`pay_[A-Za-z0-9]+$`,            // no start anchor
		`(?i)^pay_[a-z]+$`,             // a case-folded prefix
		`^pay_[a-zé]+$`,                // a class beyond ASCII
		`^payé_[a-z]+$`,                // a prefix beyond ASCII
		`^pay_[a-z]+|^re_[a-z]+$`,      // an alternation
		`^whsec_[A-Za-z0-9+/]+={0,2}$`, // more after the class
		`^pay_[^a-z]+$`,                // a negated class, which admits every other rune
		`^pay_(`,                       // no pattern at all
	}
	for _, pattern := range left {
		if newPrefixClass(pattern) != nil {
			t.Errorf("%s: taken, want it left to the regexp", pattern)
		}
	}
	inputs := []string{"", "pay_", "pay_a", "pay_abc9", "pay_ab-c", "pay_abc\n", "\npay_abc", "PAY_abc", "pay_é", "a", "ab", "abd", "abe",
		"x_", "x_a-b", "x_A", "evt_", "evt_0", "evt_0x", " pay_abc", "pay_abc ", "pay_pay_abc", "pay_\x00", "pay_\xff"}
	for _, pattern := range taken {
		m := newPrefixClass(pattern)
		if m == nil {
			t.Errorf("%s: left to the regexp, want it taken", pattern)
			continue
		}
		re := regexp.MustCompile(pattern)
		for _, s := range inputs {
			if got, want := m.matches(s), re.MatchString(s); got != want {
				t.Errorf("%s on %q: %v, the regexp says %v", pattern, s, got, want)
			}
		}
	}
}
