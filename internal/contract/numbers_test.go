package contract

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestIntegerLiteral(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"2500", "2500"},
		{"2500.0", "2500"},
		{"2500.000", "2500"},
		{"25e2", "2500"},
		{"25E+2", "2500"},
		{"2.5E3", "2500"},
		{"25000e-1", "2500"},
		{"-2.5e3", "-2500"},
		{"0.0", "0"},
		{"-0.0e5", "0"},
		{"1.50e1", "15"},
		{"0.25e2", "25"},
		{"1e63", "1" + strings.Repeat("0", 63)}, // 64 digits: the longest rewritten
		// left as sent: not whole, or longer than MaxNumberLength written out
		{"2500.5", "2500.5"},
		{"25e-1", "25e-1"},
		{"1.2345e3", "1.2345e3"},
		{"1e64", "1e64"},
		{"1e400", "1e400"},
	} {
		if got := integerLiteral(json.Number(tt.in)); string(got) != tt.want {
			t.Errorf("integerLiteral(%s) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

// TestWholeNumbersAreIntegers: JSON Schema calls 2500.0, 25e2 and 2.5E3 integers, so the
// contract accepts them where the schema says integer and hands them on as 2500, the literal
// a Go decoder binds to an int64. 2500.5 is refused.
func TestWholeNumbersAreIntegers(t *testing.T) {
	c := load(t)
	for _, amount := range []string{"2500", "2500.0", "25e2", "2.5E3", "25000e-1"} {
		valid, err := createPayment(`{"amount":` + amount + `,"currency":"usd","payment_method":"pm_card_visa","metadata":{"n":"2.5E3"}}`).validate(c)
		if err != nil {
			t.Errorf("amount %s: %v", amount, err)
			continue
		}
		body := valid.Body.(map[string]any)
		if body["amount"] != json.Number("2500") {
			t.Errorf("amount %s is handed on as %#v, want json.Number(\"2500\")", amount, body["amount"])
		}
		if n := body["metadata"].(map[string]any)["n"]; n != "2.5E3" {
			t.Errorf("a string that looks like a number became %#v", n)
		}
	}
	for _, amount := range []string{"2500.5", "25e-1"} {
		if e := invalid(t, c, createPayment(`{"amount":`+amount+`,"currency":"usd","payment_method":"pm_card_visa"}`)); e.Fields[0].Field != "/amount" {
			t.Errorf("amount %s: %+v, want an error on /amount", amount, e.Fields)
		}
	}
}
