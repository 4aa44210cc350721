package payments_test

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/payments-api/payments-api/internal/db"
	"github.com/payments-api/payments-api/internal/payments"
)

// TestEncodeResourceIsMarshal holds the hand-written encoding of a payment to the generated
// type's: for each payment, EncodeResource must give the bytes json.Marshal(Resource(p))
// gives. A member the spec adds, renames or retypes changes Resource's output and fails here
// until EncodeResource writes it too.
func TestEncodeResourceIsMarshal(t *testing.T) {
	failed, declined := "failed", "card_declined"
	for _, tt := range []struct {
		name string
		p    db.Payment
	}{
		{"new", payment(nil, nil, `{}`)},
		{"declined", func() db.Payment {
			p := payment(nil, &declined, `{}`)
			p.Status = failed
			return p
		}()},
		{"description", payment(ptr("Order 1001"), nil, `{}`)},
		{"empty description", payment(ptr(""), nil, `{}`)},
		{"escaped description", payment(ptr("a \"quoted\" \\ <b>&amp;</b>\n\t\x01"), nil, `{}`)},
		{"HTML in description", payment(ptr("<b>Tom & Jerry</b>"), nil, `{}`)},
		{"unicode description", payment(ptr("café ☕ \u2028 \u2029 😀"), nil, `{}`)},
		{"invalid UTF-8 description", payment(ptr("bad \xff\xfe byte"), nil, `{}`)},
		// jsonb's own order and spacing, as PostgreSQL returns it.
		{"metadata", payment(nil, nil, `{"b": "2", "a": "1", "order_id": "<1001>"}`)},
		{"null metadata", payment(nil, nil, `null`)},
		{"whole seconds", func() db.Payment {
			p := payment(nil, nil, `{}`)
			p.CreatedAt = time.Date(2026, 12, 2, 4, 0, 0, 0, time.UTC)
			return p
		}()},
		{"not in UTC", func() db.Payment {
			p := payment(nil, nil, `{}`)
			p.UpdatedAt = p.UpdatedAt.In(time.FixedZone("UTC+5:30", 5*3600+1800))
			return p
		}()},
	} {
		t.Run(tt.name, func(t *testing.T) {
			checkEncoding(t, tt.p)
		})
	}
}

// FuzzEncodeResource checks the same equality for any text and any amounts.
func FuzzEncodeResource(f *testing.F) {
	f.Add(int64(2500), int64(0), "Order 1001", true, "card_declined", `{"order_id": "1001"}`, int64(1764650000123456000))
	f.Add(int64(-1), int64(1<<62), "<\u2028>\"\\\xff", false, "", `{}`, int64(0))
	f.Fuzz(func(t *testing.T, amount, refunded int64, description string, hasDescription bool, failureCode, metadata string, unixNano int64) {
		p := payment(nil, nil, metadata)
		if !json.Valid([]byte(metadata)) {
			p.Metadata = []byte(`{}`)
		}
		p.Amount, p.AmountRefunded = amount, refunded
		if hasDescription {
			p.Description = &description
		}
		if failureCode != "" {
			p.FailureCode = &failureCode
		}
		p.CreatedAt = time.Unix(0, unixNano)
		checkEncoding(t, p)
	})
}

func checkEncoding(t *testing.T, p db.Payment) {
	t.Helper()
	res, wantErr := payments.Resource(p)
	got, err := payments.EncodeResource(p)
	if wantErr != nil || err != nil {
		if (wantErr == nil) != (err == nil) {
			t.Fatalf("Resource's error %v, EncodeResource's %v", wantErr, err)
		}
		return
	}
	want, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("EncodeResource:\n%s\njson.Marshal(Resource):\n%s", got, want)
	}
}

func payment(description, failureCode *string, metadata string) db.Payment {
	return db.Payment{
		ID: "pay_EFSIZ42PB7QPTPO62PD7HCCN7M", AccountID: "acct_X", Amount: 5000, Currency: "usd",
		Status: "succeeded", AmountRefunded: 1000, PaymentMethod: "pm_card_visa",
		FailureCode: failureCode, Description: description, Metadata: []byte(metadata), Version: 3,
		CreatedAt: time.Date(2026, 11, 30, 15, 30, 54, 467418000, time.UTC),
		UpdatedAt: time.Date(2026, 11, 30, 15, 31, 2, 118204000, time.UTC),
	}
}

func ptr(s string) *string { return &s }
