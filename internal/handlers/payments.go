package handlers

import (
	"context"
	"net/http"

	"github.com/payments-api/payments-api/internal/api"
	"github.com/payments-api/payments-api/internal/db"
	"github.com/payments-api/payments-api/internal/domain"
	"github.com/payments-api/payments-api/internal/idempotency"
	"github.com/payments-api/payments-api/internal/payments"
	"github.com/payments-api/payments-api/internal/trace"
)

// CreatePayment charges a card at most once per Idempotency-Key. The payment, its event and
// the stored response are written in one transaction that starts by claiming the key.
func (s *Server) CreatePayment(ctx context.Context, req api.CreatePaymentRequestObject) (api.CreatePaymentResponseObject, error) {
	acct := accountFrom(ctx)
	idem, err := idempotency.NewRequest(acct.ID, "payments.create", req.Params.IdempotencyKey, decodedBodyFrom(ctx))
	if err != nil {
		return nil, err
	}
	// The charge keeps its transaction, and a pooled connection, open while the processor
	// answers: only so many at once, so that the pool keeps connections for everything else.
	leave, err := s.idempotency.Enter(ctx, s.charges, idem)
	if err != nil {
		return nil, err
	}
	defer leave()
	res, err := s.idempotency.Do(ctx, idem, func(tx db.Tx) (idempotency.Response, error) {
		p, resource, err := s.payments.Create(ctx, tx, acct.ID, payments.CreateParams{
			Amount:        req.Body.Amount,
			Currency:      req.Body.Currency,
			PaymentMethod: string(req.Body.PaymentMethod),
			Description:   req.Body.Description,
			Metadata:      derefMap(req.Body.Metadata),
		})
		if err != nil {
			return idempotency.Response{}, err
		}
		trace.Attribute(ctx, paymentIDAttribute, p.ID)
		if p.Status == payments.StatusFailed {
			return declinedResponse(ctx, p)
		}
		return paymentResponse(p, resource), nil
	}, payments.CreateReadsAhead(acct.ID)...)
	if err != nil {
		return nil, err
	}
	return storedResponse(res), nil
}

// paymentResponse is the 201 for a new payment, with its Location and ETag. Its body is the
// resource as its event encoded it, ended as jsonResponse ends one (json.Encoder writes the
// same bytes as json.Marshal, then a newline), so it is encoded once and a later GET of the
// payment is written alike.
func paymentResponse(p db.Payment, resource []byte) idempotency.Response {
	return idempotency.Response{
		Status: http.StatusCreated,
		Header: map[string]string{"Content-Type": "application/json", "Location": "/payments/" + p.ID, "ETag": etag(p.Version)},
		Body:   append(resource, '\n'), // appending leaves the event's bytes as they are
	}
}

// paymentDeclinedError is a payment whose card was declined: the payment is stored (failed),
// and the 402 that says so is stored with it (declinedResponse).
type paymentDeclinedError struct{ paymentID, failureCode string }

func (e *paymentDeclinedError) Error() string {
	return "payment " + e.paymentID + " declined: " + e.failureCode
}

// declinedResponse is the 402 for a declined card. The payment exists, so this answer is
// stored and replayed like a 201, rather than answered by the error handler.
func declinedResponse(ctx context.Context, p db.Payment) (idempotency.Response, error) {
	prob := problemOf(&paymentDeclinedError{paymentID: p.ID, failureCode: *p.FailureCode})
	prob.Instance, prob.RequestID = "/payments", requestIDFrom(ctx)
	body, err := prob.body()
	if err != nil {
		return idempotency.Response{}, err
	}
	return idempotency.Response{
		Status: http.StatusPaymentRequired,
		Header: map[string]string{"Content-Type": "application/problem+json", "Location": "/payments/" + p.ID},
		Body:   body,
	}, nil
}

// GetPayment answers 304 when If-None-Match still matches, so a polling client spends no body,
// and 412 when an If-Match it is sent does not.
func (s *Server) GetPayment(ctx context.Context, req api.GetPaymentRequestObject) (api.GetPaymentResponseObject, error) {
	acct := accountFrom(ctx).ID
	trace.Attribute(ctx, paymentIDAttribute, req.Id)
	if req.Params.IfMatch == nil && req.Params.IfNoneMatch != nil {
		// A conditional read asks for the version alone first: when the client's copy is
		// current, the 304 costs neither the row nor its encoding. A stale copy costs a
		// second query, for the payment itself.
		version, err := s.payments.Version(ctx, acct, req.Id)
		if err != nil {
			return nil, err
		}
		if res, err := paymentNotModified(ctx, *req.Params.IfNoneMatch, version); res != nil || err != nil {
			return res, err
		}
	}
	p, err := s.payments.Get(ctx, acct, req.Id)
	if err != nil {
		return nil, err
	}
	if req.Params.IfMatch != nil {
		// Both preconditions are evaluated on the row that is answered, If-Match first
		// (RFC 9110 section 13.2.2), so the 200 is the version that matched.
		if err := readIfMatch(ctx, *req.Params.IfMatch, p.Version); err != nil {
			return nil, err
		}
		if req.Params.IfNoneMatch != nil {
			if res, err := paymentNotModified(ctx, *req.Params.IfNoneMatch, p.Version); res != nil || err != nil {
				return res, err
			}
		}
	}
	return paymentBody(p)
}

// paymentNotModified is the 304 for a payment at version when If-None-Match names it, and
// nil when it does not.
func paymentNotModified(ctx context.Context, ifNoneMatch string, version int32) (api.GetPaymentResponseObject, error) {
	match, err := checkIfNoneMatch(ctx, ifNoneMatch, version)
	if err != nil || !match {
		return nil, err
	}
	return notModified(etag(version)), nil
}

// encodedPayment is a 200 with a payment, as the generated GetPayment200JSONResponse and
// UpdatePayment200JSONResponse write one, but from bytes payments.EncodeResource wrote
// straight from the row: a read is most of what the API serves, and the generated type costs
// a map per nullable member and a reflective encoding (docs/performance.md). An update's is
// written as the answer its Idempotency-Key stores (stored).
type encodedPayment struct {
	body []byte // the resource and a newline, as json.Encoder ends it
	etag string
}

func paymentBody(p db.Payment) (encodedPayment, error) {
	body, err := payments.EncodeResource(p)
	if err != nil {
		return encodedPayment{}, err
	}
	return encodedPayment{body: append(body, '\n'), etag: etag(p.Version)}, nil
}

func (r encodedPayment) write(w http.ResponseWriter) error {
	h := w.Header()
	h[fieldContentType] = []string{"application/json"}
	h[fieldETag] = []string{r.etag}
	w.WriteHeader(http.StatusOK)
	_, err := w.Write(r.body)
	return err
}

// stored is the 200 as an idempotency key stores it.
func (r encodedPayment) stored() idempotency.Response {
	return idempotency.Response{
		Status: http.StatusOK,
		Header: map[string]string{"Content-Type": "application/json", "ETag": r.etag},
		Body:   r.body,
	}
}

// VisitGetPaymentResponse lets the generated strict handler write it.
func (r encodedPayment) VisitGetPaymentResponse(w http.ResponseWriter) error { return r.write(w) }

// ListPayments pages through the account's payments, newest first.
func (s *Server) ListPayments(ctx context.Context, req api.ListPaymentsRequestObject) (api.ListPaymentsResponseObject, error) {
	params := payments.ListParams{
		Page:       s.page(req.Params.Limit, req.Params.StartingAfter),
		Status:     (*string)(req.Params.Status),
		CreatedGte: req.Params.CreatedGte,
		CreatedLt:  req.Params.CreatedLt,
	}
	rows, hasMore, err := s.payments.List(ctx, accountFrom(ctx).ID, params)
	if err != nil {
		return nil, err
	}
	data, err := resources(rows, payments.Resource)
	if err != nil {
		return nil, err
	}
	return api.ListPayments200JSONResponse{Body: api.PaymentList{Data: data, HasMore: hasMore}}, nil
}

// UpdatePayment applies a merge patch under If-Match: 428 without it, 412 when stale. With an
// Idempotency-Key (optional here), the update runs in the transaction that claims the key and
// its 200 is stored with it: a retry replays that answer, though its If-Match is stale by then.
// A 412 or 428 commits nothing and leaves the key unused.
func (s *Server) UpdatePayment(ctx context.Context, req api.UpdatePaymentRequestObject) (api.UpdatePaymentResponseObject, error) {
	trace.Attribute(ctx, paymentIDAttribute, req.Id)
	pre, err := requiredIfMatch(ctx, req.Params.IfMatch)
	if err != nil {
		return nil, err
	}
	body := req.ApplicationMergePatchPlusJSONBody
	if body == nil {
		body = (*api.UpdatePaymentApplicationMergePatchPlusJSONRequestBody)(req.JSONBody)
	}
	if body == nil { // the validator requires a body, so this is a binding gap: refuse, never no-op
		return nil, &domain.ValidationError{Field: "/", Message: "the body could not be read as a merge patch"}
	}
	acct, patch := accountFrom(ctx).ID, mergePatch(body)
	res, err := s.idempotent(ctx, "payments.update", req.Params.IdempotencyKey, idempotency.OnResource(req.Id, decodedBodyFrom(ctx)),
		func(tx db.Tx) (idempotency.Response, error) {
			p, err := s.payments.Update(ctx, tx, acct, req.Id, pre, patch)
			if err := traceIfMatch(ctx, err); err != nil {
				return idempotency.Response{}, err
			}
			res, err := paymentBody(p)
			if err != nil {
				return idempotency.Response{}, err
			}
			return res.stored(), nil
		})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// mergePatch reads which members the patch carries: absent, null or a value (RFC 7396).
func mergePatch(body *api.UpdatePaymentApplicationMergePatchPlusJSONRequestBody) payments.Patch {
	var patch payments.Patch
	if body.Description.IsSpecified() {
		patch.SetDescription = true
		if !body.Description.IsNull() {
			d := body.Description.MustGet()
			patch.Description = &d
		}
	}
	if body.Metadata.IsSpecified() {
		if body.Metadata.IsNull() {
			patch.ClearMetadata = true
		} else {
			patch.Metadata = body.Metadata.MustGet()
		}
	}
	return patch
}

// resources converts database rows to their API representation, for list pages.
func resources[Row, Res any](rows []Row, convert func(Row) (Res, error)) ([]Res, error) {
	out := make([]Res, 0, len(rows))
	for _, r := range rows {
		res, err := convert(r)
		if err != nil {
			return nil, err
		}
		out = append(out, res)
	}
	return out, nil
}

func derefMap(m *api.Metadata) map[string]string {
	if m == nil {
		return nil
	}
	return *m
}
