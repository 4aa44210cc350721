// Package payments owns the payment resource: charging a card through the processor and
// recording the payment with its event, reading and listing, and updating under optimistic
// concurrency (a version that every change bumps). A change either owns its transaction or,
// when it joins the caller's (the one that claimed the Idempotency-Key), takes its db.Tx;
// reads run outside any transaction.
// It imports the database layer, the processor, events, the domain and the generated API types
// (for the resource's public shape, which events carry too), and trace (it times the charge);
// handlers call it.
package payments
