package payments

import (
	"encoding/json"
	"fmt"

	"github.com/oapi-codegen/nullable"
	"github.com/payments-api/payments-api/internal/api"
	"github.com/payments-api/payments-api/internal/db"
)

// Resource is the payment as the API shows it: in responses and in event payloads.
func Resource(p db.Payment) (api.Payment, error) {
	var metadata api.Metadata
	if err := json.Unmarshal(p.Metadata, &metadata); err != nil {
		return api.Payment{}, fmt.Errorf("decode metadata of %s: %w", p.ID, err)
	}
	res := api.Payment{
		Object:         api.PaymentObjectPayment,
		Id:             p.ID,
		Amount:         p.Amount,
		Currency:       p.Currency,
		Status:         api.PaymentStatus(p.Status),
		AmountRefunded: p.AmountRefunded,
		PaymentMethod:  p.PaymentMethod,
		Description:    nullableOf(p.Description),
		Metadata:       metadata,
		CreatedAt:      p.CreatedAt.UTC(),
		UpdatedAt:      p.UpdatedAt.UTC(),
	}
	res.FailureCode = nullable.NewNullNullable[api.PaymentFailureCode]()
	if p.FailureCode != nil {
		res.FailureCode.Set(api.PaymentFailureCode(*p.FailureCode))
	}
	return res, nil
}

// nullableOf maps a nullable column to a member that is always present, null when unset.
func nullableOf(v *string) nullable.Nullable[string] {
	if v == nil {
		return nullable.NewNullNullable[string]()
	}
	return nullable.NewNullableWithValue(*v)
}

// RefundResource is the refund as the API shows it: in responses and in event payloads.
func RefundResource(r db.Refund) (api.Refund, error) {
	var metadata api.Metadata
	if err := json.Unmarshal(r.Metadata, &metadata); err != nil {
		return api.Refund{}, fmt.Errorf("decode metadata of %s: %w", r.ID, err)
	}
	res := api.Refund{
		Object:    api.RefundObjectRefund,
		Id:        r.ID,
		PaymentId: r.PaymentID,
		Amount:    r.Amount,
		Currency:  r.Currency,
		Status:    api.RefundStatus(r.Status),
		Metadata:  metadata,
		CreatedAt: r.CreatedAt.UTC(),
	}
	res.Reason = nullable.NewNullNullable[api.RefundReason]()
	if r.Reason != nil {
		res.Reason.Set(api.RefundReason(*r.Reason))
	}
	return res, nil
}
