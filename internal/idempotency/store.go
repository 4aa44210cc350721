package idempotency

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/payments-api/payments-api/internal/db"
	"github.com/payments-api/payments-api/internal/domain"
	"github.com/payments-api/payments-api/internal/trace"
)

// DefaultTTL is how long a key is remembered, as Stripe does.
const DefaultTTL = 24 * time.Hour

// Request is one use of a key: who, which operation, which key, and the request's fingerprint.
type Request struct {
	AccountID   string
	Operation   string // "payments.create": the same key on two operations is two keys
	Key         string
	Fingerprint []byte
}

// NewRequest parses the Idempotency-Key header and fingerprints the body, decoded as
// Fingerprint says.
func NewRequest(accountID, operation, keyHeader string, body any) (Request, error) {
	key, err := ParseKey(keyHeader)
	if err != nil {
		return Request{}, err
	}
	fp, err := Fingerprint(operation, body)
	if err != nil {
		return Request{}, &domain.ValidationError{Field: "/", Message: err.Error()}
	}
	return Request{AccountID: accountID, Operation: operation, Key: key, Fingerprint: fp}, nil
}

// Response is a complete HTTP response, kept as bytes so a replay is identical to the original.
type Response struct {
	Status   int
	Header   map[string]string // Content-Type and resource headers (Location, ETag)
	Body     []byte
	Replayed bool // true when this is the stored response, not a new one
}

// How Do answered a request, as told to an Observer.
const (
	OutcomeClaimed  = "claimed"   // the key was new: the operation ran and its response was stored
	OutcomeReplayed = "replayed"  // the key was done: the stored response was answered
	OutcomeInFlight = "in_flight" // the key's first use was still running: 409
	OutcomeMismatch = "mismatch"  // the key was used with another body: 422
)

// Observer is told every outcome Do decides (the metrics package implements it), so this
// package counts without knowing how counts are exported.
type Observer interface {
	IdempotencyOutcome(operation, outcome string)
}

// Store runs operations under idempotency keys.
type Store struct {
	pool     *pgxpool.Pool
	ttl      time.Duration
	observer Observer
}

// NewStore remembers keys for ttl.
func NewStore(pool *pgxpool.Pool, ttl time.Duration) *Store {
	return &Store{pool: pool, ttl: ttl}
}

// WithObserver returns a copy of s that tells o every outcome; s itself is not changed. A nil
// o is told nothing.
func (s *Store) WithObserver(o Observer) *Store {
	cp := *s
	cp.observer = o
	return &cp
}

// Do runs op at most once per key, inside one transaction that begins by claiming the key:
//
//   - key in flight (its first use has not committed): domain.ErrIdempotencyKeyInUse, at once;
//   - key done, same fingerprint: the stored response, Replayed set;
//   - key done, other fingerprint: domain.ErrIdempotencyKeyReused;
//   - key new (or expired): op runs inside the transaction. If it returns a Response,
//     the response is stored beside the effect and both commit. If it returns an error,
//     everything rolls back (the claim too), so nothing is stored and a retry runs op again.
//
// The reads in ahead go with the claim, in the transaction's first round trip (db.Ahead).
//
// This is right because op only changes this database. An operation that called a foreign
// system (a real card network) between local transactions would need recovery points and a
// lease instead (Brandur Leach, "Implementing Stripe-like Idempotency Keys in Postgres").
func (s *Store) Do(ctx context.Context, req Request, op func(tx db.Tx) (Response, error), ahead ...*db.Ahead) (Response, error) {
	var res Response
	err := db.InTx(ctx, s.pool, func(tx db.Tx) error {
		span := trace.Start(ctx, "claim")
		claim, err := tx.IdempotencyKeyClaim(ctx, db.IdempotencyKeyClaimParams{
			LockKey:     req.AccountID + "|" + req.Operation + "|" + req.Key, // ids and operations contain no "|"
			AccountID:   req.AccountID,
			Operation:   req.Operation,
			Key:         req.Key,
			Fingerprint: req.Fingerprint,
			TtlSeconds:  s.ttl.Seconds(),
		})
		span.End()
		switch {
		case err != nil:
			return fmt.Errorf("claim idempotency key: %w", err)
		case claim.ResponseStatus != nil:
			// The key was used and its response committed: answer from it.
			span := trace.Start(ctx, "replay")
			res, err = replay(req, claim.Fingerprint, *claim.ResponseStatus, claim.ResponseHeaders, claim.ResponseBody)
			span.End()
			return err
		case !claim.Claimed:
			// Another transaction holds the key's lock (its first use is still running, or
			// another retry is reading it), or the row was committed too late for the
			// claim's snapshot. Only a committed row can answer; without one, it is in flight.
			res, err = s.stored(ctx, tx.Queries, req)
			if errors.Is(err, domain.ErrNotFound) {
				return domain.ErrIdempotencyKeyInUse
			}
			return err
		}
		if res, err = op(tx); err != nil {
			return err
		}
		// The response is queued, not sent: it goes with the transaction's last round trip.
		return s.save(ctx, tx.Later, req, res)
	}, ahead...)
	s.observe(ctx, req.Operation, res, err)
	return res, err
}

// observe tells the observer and the request's trace how Do answered. An error other than
// the key's own (a failed operation, which rolled its claim back) is no outcome: the key
// stays free.
func (s *Store) observe(ctx context.Context, operation string, res Response, err error) {
	var outcome string
	switch {
	case errors.Is(err, domain.ErrIdempotencyKeyInUse):
		outcome = OutcomeInFlight
	case errors.Is(err, domain.ErrIdempotencyKeyReused):
		outcome = OutcomeMismatch
	case err != nil:
		return
	case res.Replayed:
		outcome = OutcomeReplayed
	default:
		outcome = OutcomeClaimed
	}
	trace.Decide(ctx, trace.Idempotency, outcome)
	if s.observer != nil {
		s.observer.IdempotencyOutcome(operation, outcome)
	}
}

// stored loads the committed response of a used key (domain.ErrNotFound when there is none).
func (s *Store) stored(ctx context.Context, q *db.Queries, req Request) (Response, error) {
	defer trace.Start(ctx, "replay").End()
	row, err := q.IdempotencyKeyGetCompleted(ctx, db.IdempotencyKeyGetCompletedParams{
		AccountID: req.AccountID, Operation: req.Operation, Key: req.Key,
	})
	if err != nil {
		return Response{}, fmt.Errorf("load idempotency key: %w", db.Translate(err))
	}
	return replay(req, row.Fingerprint, *row.ResponseStatus, row.ResponseHeaders, row.ResponseBody)
}

// replay is the stored response of a used key, or domain.ErrIdempotencyKeyReused when the
// key was first used for a different request.
func replay(req Request, fingerprint []byte, status int32, headers, body []byte) (Response, error) {
	if !bytes.Equal(fingerprint, req.Fingerprint) {
		return Response{}, domain.ErrIdempotencyKeyReused
	}
	res := Response{Status: int(status), Body: body, Replayed: true}
	if err := json.Unmarshal(headers, &res.Header); err != nil {
		return Response{}, fmt.Errorf("decode stored headers: %w", err)
	}
	return res, nil
}

func (s *Store) save(ctx context.Context, q *db.Queries, req Request, res Response) error {
	status := int32(res.Status)
	err := q.IdempotencyKeySaveResponse(ctx, db.IdempotencyKeySaveResponseParams{
		ResponseStatus:  &status,
		ResponseHeaders: encodeHeader(res.Header),
		ResponseBody:    res.Body,
		AccountID:       req.AccountID,
		Operation:       req.Operation,
		Key:             req.Key,
	})
	if err != nil {
		return fmt.Errorf("save idempotent response: %w", err)
	}
	return nil
}

// encodeHeader writes a response's header fields as the JSON object replay decodes, names in
// order. json.Marshal would write the same object, but through reflection, whose walk of a
// map puts each name and value on the heap: eight allocations on every create.
func encodeHeader(h map[string]string) json.RawMessage {
	if h == nil {
		return json.RawMessage("null")
	}
	var out bytes.Buffer
	out.WriteByte('{')
	for i, name := range slices.Sorted(maps.Keys(h)) {
		if i > 0 {
			out.WriteByte(',')
		}
		writeString(&out, name)
		out.WriteByte(':')
		writeString(&out, h[name])
	}
	out.WriteByte('}')
	return out.Bytes()
}
