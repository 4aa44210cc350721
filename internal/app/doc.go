// Package app builds the application once, in one place: the pools, the schema, the demo
// accounts, the metrics, the authenticator, the idempotency store, the job clients and their
// workers, the services and the HTTP handler that serves them. A process and a test that
// build it from the same Config run the same server, so the tests prove what ships.
//
// Serving, listeners and signals are not its business: cmd/payments-api opens the sockets
// and drains them. Only cmd and tests import this package.
package app
