// Package integration holds the tests that run payments-api as a program among programs:
// the real binary, started as a separate process, behind Toxiproxy, HAProxy, PgBouncer or
// Prism, driven by the generated clients, by Redocly Respect, or by the documentation's own
// curl examples; and processes killed mid-job or sharing one database.
//
// Its non-test files are the harness those tests share with the commands' own tests:
// server.go builds cmd/payments-api once per test binary, starts it with an environment on a
// free port, reads its log from its output and stops it with SIGTERM; database.go and
// reports.go seed and read what a scenario needs. A package that starts servers calls Main
// from its TestMain, which removes the build when its tests end. Under -race the server is
// built with the race detector too, and a race it reports fails the test.
//
// The tests run with `go test ./...` on the PostgreSQL of TEST_DATABASE_URL, as every other
// package's do; a test whose outside program is missing (haproxy, pgbouncer) skips, and the
// Node.js tools (Prism, Redocly, tsc) are expected where scripts/test installs them.
// Nothing here imports the server's packages: it reaches the server as a program, and
// imports only the other harnesses (apitest, dbtest, redistest) beside outside libraries.
package integration
