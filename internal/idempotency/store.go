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

// Do runs op at most once per key, inside one transaction that begins by taking the key's
// lock and reading its row:
//
//   - key done, same fingerprint: the stored response, Replayed set;
//   - key done, other fingerprint: domain.ErrIdempotencyKeyReused;
//   - key in flight (another transaction holds its lock, and no use of it has committed):
//     domain.ErrIdempotencyKeyInUse, at once;
//   - key new (or expired): op runs inside the transaction. If it returns a Response, the
//     key's row is written with the response, beside the effect, and both commit. If it
//     returns an error, everything rolls back, so nothing is stored and a retry runs op again.
//
// The lock, the key's row and the reads in ahead are the transaction's first round trip
// (db.Ahead); the row and the effect's writes go with COMMIT, in the second.
//
// This is right because op only changes this database. An operation that called a foreign
// system (a real card network) between local transactions would need recovery points and a
// lease instead (Brandur Leach, "Implementing Stripe-like Idempotency Keys in Postgres").
func (s *Store) Do(ctx context.Context, req Request, op func(tx db.Tx) (Response, error), ahead ...db.Ahead) (Response, error) {
	var res Response
	key := db.IdempotencyKeyAhead(db.IdempotencyKeyGetParams{AccountID: req.AccountID, Operation: req.Operation, Key: req.Key})
	err := db.InTx(ctx, s.pool, func(tx db.Tx) error {
		span := trace.Start(ctx, "claim")
		acquired, err := tx.IdempotencyKeyLock(ctx, lockKey(req))
		used, found, readErr := key.Row()
		span.End()
		switch {
		case err != nil:
			return fmt.Errorf("lock idempotency key: %w", err)
		case readErr != nil:
			return fmt.Errorf("read idempotency key: %w", readErr)
		case found && !used.Expired:
			// The key was used and its response committed: answer from it, whoever holds
			// the lock (another retry reading it, as this one is).
			span := trace.Start(ctx, "replay")
			res, err = replay(req, used.Fingerprint, *used.ResponseStatus, used.ResponseHeaders, used.ResponseBody)
			span.End()
			return err
		case !acquired:
			// Another transaction holds the lock and no use of the key has committed: its
			// first use is still running.
			return domain.ErrIdempotencyKeyInUse
		}
		if res, err = op(tx); err != nil {
			return err
		}
		// The row is queued, not sent: it goes with the transaction's last round trip. A row
		// found here has expired (one that had not was replayed), and makes way for it.
		return s.record(ctx, tx.Later, req, res, found)
	}, append([]db.Ahead{key}, ahead...)...)
	s.observe(ctx, req.Operation, res, err)
	return res, err
}

// lockKey names the key's lock (IdempotencyKeyLock). Ids and operations contain no "|".
func lockKey(req Request) string { return req.AccountID + "|" + req.Operation + "|" + req.Key }

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

// record queues the key's row, holding res, for the commit: after deleting the key's
// expired row, when it has one.
func (s *Store) record(ctx context.Context, q *db.Queries, req Request, res Response, expired bool) error {
	if expired {
		err := q.IdempotencyKeyDeleteIfExpired(ctx, db.IdempotencyKeyDeleteIfExpiredParams{
			AccountID: req.AccountID, Operation: req.Operation, Key: req.Key,
		})
		if err != nil {
			return fmt.Errorf("delete expired idempotency key: %w", err)
		}
	}
	status := int32(res.Status)
	err := q.IdempotencyKeyInsert(ctx, db.IdempotencyKeyInsertParams{
		AccountID:       req.AccountID,
		Operation:       req.Operation,
		Key:             req.Key,
		Fingerprint:     req.Fingerprint,
		ResponseStatus:  &status,
		ResponseHeaders: encodeHeader(res.Header),
		ResponseBody:    res.Body,
		TtlSeconds:      s.ttl.Seconds(),
	})
	if err != nil {
		return fmt.Errorf("record idempotent response: %w", err)
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
