package contract

import (
	"context"
	"fmt"
	"net/http/httptest"
	"testing"
)

// BenchmarkValidateGetPayment is the validation every GET /payments/{id} pays, with the ID's
// pattern matched by prefixClass and, for comparison, by the regexp engine.
func BenchmarkValidateGetPayment(b *testing.B) {
	op := load(b).Operation("GET", "/payments/{id}")
	var id *value
	for _, p := range op.params {
		if p.name == "id" {
			id = p
		}
	}
	req := httptest.NewRequestWithContext(context.Background(), "GET", "/payments/pay_YEJFMEDWCPMRGFWKE3NNRZ6OCW", nil)
	params := paramMap{"id": "pay_YEJFMEDWCPMRGFWKE3NNRZ6OCW"}
	fast := id.plain.fast
	for _, matcher := range []string{"prefixClass", "regexp"} {
		b.Run(matcher, func(b *testing.B) {
			if matcher == "regexp" {
				id.plain.fast = nil
				defer func() { id.plain.fast = fast }()
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := op.Validate(req, params, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkValidateCreatePayment is the validation every POST /payments pays.
func BenchmarkValidateCreatePayment(b *testing.B) {
	c := load(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := createPayment(createBody).validate(c); err != nil {
			b.Fatal(err)
		}
	}
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
