package payments

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/payments-api/payments-api/internal/db"
	"github.com/payments-api/payments-api/internal/domain"
	"github.com/payments-api/payments-api/internal/events"
)

// Patch is a JSON merge patch of a payment (RFC 7396).
type Patch struct {
	SetDescription bool               // description was present in the patch
	Description    *string            // its value; nil clears it
	ClearMetadata  bool               // "metadata": null
	Metadata       map[string]*string // merged key by key; a nil value removes the key
}

// Update applies patch if the payment's version still satisfies pre. The check and the write
// are one conditional UPDATE, so two clients holding the same ETag cannot both succeed.
func (s *Service) Update(ctx context.Context, accountID, id string, pre domain.Precondition, patch Patch) (db.Payment, error) {
	if patch.Metadata == nil {
		patch.Metadata = map[string]*string{} // merging {} changes nothing
	}
	mergePatch, err := json.Marshal(patch.Metadata)
	if err != nil {
		return db.Payment{}, err
	}
	var updated db.Payment
	err = db.InTx(ctx, s.pool, func(tx db.Tx) error {
		updated, err = tx.PaymentUpdate(ctx, db.PaymentUpdateParams{
			SetDescription: patch.SetDescription,
			Description:    patch.Description,
			ClearMetadata:  patch.ClearMetadata,
			MetadataPatch:  mergePatch,
			AccountID:      accountID,
			ID:             id,
			AnyVersion:     pre.Any,
			Versions:       pre.Versions,
		})
		if errors.Is(db.Translate(err), domain.ErrNotFound) {
			return s.whyNotUpdated(ctx, tx.Queries, accountID, id)
		}
		if err != nil {
			return fmt.Errorf("update payment %s: %w", id, err)
		}
		if err := checkMetadataSize(updated.Metadata); err != nil {
			return err // rolls the update back
		}
		return recordEvent(ctx, tx, events.PaymentUpdated, updated)
	})
	return updated, err
}

// whyNotUpdated tells a missing payment (404) from a stale precondition (412) after the
// conditional UPDATE matched no row. Reading afterwards is safe: the write already failed.
func (s *Service) whyNotUpdated(ctx context.Context, q *db.Queries, accountID, id string) error {
	current, err := q.PaymentGetByID(ctx, db.PaymentGetByIDParams{AccountID: accountID, ID: id})
	if err != nil {
		return fmt.Errorf("update payment %s: %w", id, db.Translate(err))
	}
	return &domain.PreconditionFailedError{CurrentVersion: current.Version}
}

func checkMetadataSize(raw []byte) error {
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return err
	}
	if len(m) > MaxMetadataKeys {
		return &domain.ValidationError{
			Field:   "/metadata",
			Message: fmt.Sprintf("after the merge the payment would have %d metadata keys; the limit is %d", len(m), MaxMetadataKeys),
		}
	}
	return nil
}
