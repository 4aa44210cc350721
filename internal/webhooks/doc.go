// Package webhooks calls customers back: it signs payloads exactly as Standard Webhooks
// specifies (and ships a verifier a Go receiver can copy), refuses to dial private, loopback,
// link-local and metadata addresses (checked on the address actually dialled; the operator
// may open loopback and private ones for local development, never the others), sends one
// attempt with a timeout and no redirects, classifies its outcome, and spaces retries on the
// Standard Webhooks schedule. It also owns webhook endpoints and delivery records, and the
// River job that sends a delivery: enqueued in the transaction that writes the delivery
// (JobQueue, which the events outbox calls through its DeliveryQueue interface), run by
// Worker on its own queue, one attempt per run: a retry is a job of its own, scheduled for
// its time, or, within seconds, the same job snoozed.
//
// It imports the domain, database, events and jobs layers, River and the standard library; domain
// packages (payments, events, reports) never import it, so no outgoing HTTP call can happen
// inside their transactions. internal/app wires it to the job runner.
package webhooks
