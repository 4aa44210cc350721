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

// Update applies patch in tx, if the payment's version still satisfies pre: the update of
// a PATCH, whose transaction claims its Idempotency-Key first when it has one. The check and
// the write are one conditional UPDATE, so two clients holding the same ETag cannot both
// succeed. A patch that changes nothing leaves the payment, its version and its events as
// they were and returns it as it is.
func (s *Service) Update(ctx context.Context, tx db.Tx, accountID, id string, pre domain.Precondition, patch Patch) (db.Payment, error) {
	if patch.Metadata == nil {
		patch.Metadata = map[string]*string{} // merging {} changes nothing
	}
	mergePatch, err := json.Marshal(patch.Metadata)
	if err != nil {
		return db.Payment{}, err
	}
	args := db.PaymentUpdateParams{
		SetDescription: patch.SetDescription,
		Description:    patch.Description,
		ClearMetadata:  patch.ClearMetadata,
		MetadataPatch:  mergePatch,
		AccountID:      accountID,
		ID:             id,
		AnyVersion:     pre.Any,
		Versions:       pre.Versions,
	}
	updated, changed, err := s.updateOrExplain(ctx, tx, args, pre)
	if err != nil || !changed {
		return updated, err
	}
	if err := checkMetadataSize(updated.Metadata); err != nil {
		return db.Payment{}, err // rolls the update back
	}
	if _, err := s.recordEvent(ctx, tx, events.PaymentUpdated, updated); err != nil {
		return db.Payment{}, err
	}
	return updated, nil
}

// updateOrExplain runs the conditional UPDATE. When it matches no row, the payment is
// missing (404), the precondition is stale (412) or the patch changes nothing (the payment is
// returned unchanged): the row is locked and read to tell which, so the answer holds. If the
// payment changed between the UPDATE and the lock so that the patch now applies, the UPDATE
// runs again under the lock, where nothing can change it.
func (s *Service) updateOrExplain(ctx context.Context, tx db.Tx, args db.PaymentUpdateParams, pre domain.Precondition) (db.Payment, bool, error) {
	updated, err := tx.PaymentUpdate(ctx, args)
	if !errors.Is(db.Translate(err), domain.ErrNotFound) {
		return updated, err == nil, wrapUpdate(args.ID, err)
	}
	current, err := tx.PaymentGetForUpdate(ctx, db.PaymentGetForUpdateParams{AccountID: args.AccountID, ID: args.ID})
	if err != nil {
		err = db.NotFoundOrAccountDeleted(ctx, tx.Queries, args.AccountID, err)
		return db.Payment{}, false, wrapUpdate(args.ID, db.Translate(err))
	}
	if !pre.Matches(current.Version) {
		return db.Payment{}, false, &domain.PreconditionFailedError{CurrentVersion: current.Version}
	}
	updated, err = tx.PaymentUpdate(ctx, args)
	if errors.Is(db.Translate(err), domain.ErrNotFound) {
		return current, false, nil // a no-op
	}
	return updated, err == nil, wrapUpdate(args.ID, err)
}

func wrapUpdate(id string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("update payment %s: %w", id, err)
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
