// Package migrations embeds the SQL schema, applied by golang-migrate at start-up and read by
// sqlc as the schema it type-checks queries against. Files are numbered up/down pairs.
package migrations

import "embed"

// FS holds every *.up.sql and *.down.sql file.
//
//go:embed *.sql
var FS embed.FS
