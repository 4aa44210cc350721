package contract

import (
	"context"
	"fmt"
	"net/http/httptest"
	"testing"
)

// BenchmarkValidateGetPayment is the validation every GET /payments/{id} pays, with the ID's
// pattern matched by classPattern and, for comparison, by the regexp engine.
func BenchmarkValidateGetPayment(b *testing.B) {
	op := load(b).Operation("GET", "/payments/{id}")
	req := httptest.NewRequestWithContext(context.Background(), "GET", "/payments/pay_YEJFMEDWCPMRGFWKE3NNRZ6OCW", nil)
	params := paramMap{"id": "pay_YEJFMEDWCPMRGFWKE3NNRZ6OCW"}
	benchMatchers(b, param(op, "id").plain, func() error {
		_, err := op.Validate(req, params, nil)
		return err
	})
}

// BenchmarkValidateCreatePayment is the validation every POST /payments pays, with a UUID for
// its Idempotency-Key, whose pattern is matched by classPattern and, for comparison, by the
// regexp engine.
func BenchmarkValidateCreatePayment(b *testing.B) {
	c := load(b)
	req := httptest.NewRequestWithContext(context.Background(), "POST", "/payments", nil)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", "3f2b8c1e-4a5d-4e6f-8a7b-9c0d1e2f3a4b")
	body := []byte(createBody)
	benchMatchers(b, param(c.Operation("POST", "/payments"), "Idempotency-Key").plain, func() error {
		_, err := c.ValidateRequest(req, body)
		return err
	})
}

// benchMatchers runs validate with plain's pattern matched by classPattern, then by the
// regexp alone.
func benchMatchers(b *testing.B, plain *plainString, validate func() error) {
	fast := plain.fast
	for _, matcher := range []string{"classPattern", "regexp"} {
		b.Run(matcher, func(b *testing.B) {
			if matcher == "regexp" {
				plain.fast = nil
				defer func() { plain.fast = fast }()
			}
			b.ReportAllocs()
			for b.Loop() {
				if err := validate(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// param is op's parameter of that name.
func param(op *Operation, name string) *value {
	for _, p := range op.params {
		if p.name == name {
			return p
		}
	}
	panic("no parameter " + name)
}

// BenchmarkValidateBadNames shows that the cost of an invalid body grows linearly with it:
// doubling the number of too-long metadata names doubles ns/op and B/op.
func BenchmarkValidateBadNames(b *testing.B) {
	c := load(b)
	for _, n := range []int{250, 500, 1000, 2000, 4000} {
		body := `{"amount":1,"currency":"usd","payment_method":"pm_card_visa","metadata":` + manyMembers(n, 45) + `}`
		b.Run(fmt.Sprintf("names=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				if _, err := createPayment(body).validate(c); err == nil {
					b.Fatal("accepted")
				}
			}
		})
	}
}

// BenchmarkValidateUnknownMembers is the largest body of unknown members that fits in 1 MiB.
func BenchmarkValidateUnknownMembers(b *testing.B) {
	c := load(b)
	body := `{"amount":1,"currency":"usd","payment_method":"pm_card_visa",` + manyMembers(80000, 6)[1:]
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, err := createPayment(body).validate(c); err == nil {
			b.Fatal("accepted")
		}
	}
}
