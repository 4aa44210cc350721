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
