// Package payments owns the payment resource: charging a card through the processor and
// recording the payment with its event, reading and listing, and updating under optimistic
// concurrency (a version that every change bumps). Each exported method either owns its
// transaction or, when it must join the caller's (the idempotency claim), takes q.
// It imports the database layer, the processor, events, the domain and the generated API types
// (for the resource's public shape, which events carry too), and trace (it times the charge);
// handlers call it.
package payments
