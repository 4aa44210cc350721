// Package idempotency makes a POST safe to retry. Read it top to bottom as the lesson:
//
//  1. key.go: the Idempotency-Key header, bare (Stripe) or as a structured-field string (IETF).
//  2. fingerprint.go: what "the same request" means: SHA-256 of the operation and the body's
//     canonical JSON, so key order and whitespace do not matter but any value does.
//  3. store.go: the key is claimed by the first statements of the same transaction that
//     performs the operation (its advisory lock, then its row), and its record is one row,
//     unique on (account, operation, key), written with the operation's response before
//     COMMIT. Either the operation and its record commit together, or neither exists and a
//     retry runs again.
//     A second request with the key gets 409 while the first is in flight (answered at
//     once, not after the first finishes), the stored response byte for byte afterwards,
//     or 422 if its body differs.
//  4. gate.go: charges hold their transaction across the processor's call, so the process
//     lets at most three quarters of its pool's connections into them at once; a create
//     that has waited for a turn 50 ms asks whether its key is in flight elsewhere
//     (IdempotencyKeyInFlight, which reads the claim's lock without taking it), so a
//     duplicate still gets its 409 at once.
//  5. sweep.go: keys expire (24 h by default) and are deleted in small batches.
//
// It imports the database layer, the domain package and trace (to report its phases and
// outcome to the request's trace); handlers call it.
package idempotency
