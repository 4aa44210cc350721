package db_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/payments-api/payments-api/internal/db"
	"github.com/payments-api/payments-api/internal/testing/dbtest"
)

// TestJSONColumnsScanAsTheirBytes: a json or jsonb column scanned into a json.RawMessage is
// its own copy of the text PostgreSQL sent, row after row (pgx reuses its read buffer), in
// pgx's default mode and in simple_protocol, where results come as text; NULL is nil, and
// any other target is still decoded.
func TestJSONColumnsScanAsTheirBytes(t *testing.T) {
	t.Parallel()
	url := dbtest.NewURL(t)
	for _, mode := range []string{"", "&default_query_exec_mode=simple_protocol"} {
		t.Run("mode"+mode, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			pool, err := db.Open(ctx, url+mode, db.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer pool.Close()
			rows, err := pool.Query(ctx, `SELECT b, j FROM (VALUES
				('{"a":1}'::jsonb, '{"a":1}'::json), ('{"b":[2,3]}', '{ "b" : [2,3] }'), (NULL, NULL)) AS t(b, j)`)
			if err != nil {
				t.Fatal(err)
			}
			got, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) ([2]json.RawMessage, error) {
				var r [2]json.RawMessage
				return r, row.Scan(&r[0], &r[1])
			})
			if err != nil {
				t.Fatal(err)
			}
			want := [][2]string{{`{"a": 1}`, `{"a":1}`}, {`{"b": [2, 3]}`, `{ "b" : [2,3] }`}, {"", ""}}
			for i, r := range got {
				if string(r[0]) != want[i][0] || string(r[1]) != want[i][1] || (want[i][0] == "") != (r[0] == nil) {
					t.Errorf("row %d: jsonb %q, json %q; want %q", i, r[0], r[1], want[i])
				}
			}
			// Enough rows to fill pgx's read buffer more than once.
			many, err := pool.Query(ctx, `SELECT jsonb_build_object('n', n) FROM generate_series(1, 5000) AS n`)
			if err != nil {
				t.Fatal(err)
			}
			each, err := pgx.CollectRows(many, pgx.RowTo[json.RawMessage])
			if err != nil {
				t.Fatal(err)
			}
			for i, r := range each {
				if want := fmt.Sprintf(`{"n": %d}`, i+1); string(r) != want {
					t.Fatalf("row %d of 5000: %q, want %q", i+1, r, want)
				}
			}
			var decoded map[string][]int
			if err := pool.QueryRow(ctx, `SELECT '{"b":[2,3]}'::jsonb`).Scan(&decoded); err != nil || len(decoded["b"]) != 2 {
				t.Errorf("into a map: %v, %v", decoded, err)
			}
		})
	}
}
