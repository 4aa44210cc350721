package db

import (
	"bytes"
	"context"
	"encoding/json"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// rawJSON is a pool's AfterConnect: it makes pgx hand a json or jsonb column to a
// json.RawMessage (what sqlc's override makes of them) as a copy of its bytes. By default
// pgx runs json.Unmarshal into one, which checks the text again, a byte at a time, after
// PostgreSQL checked it on the way in, and allocates its decoder on every row: about 1,700
// instructions and two allocations on every read of a payment, for its metadata's "{}".
// Any other target (a map, a struct) is still decoded by encoding/json.
func rawJSON(_ context.Context, conn *pgx.Conn) error {
	types := conn.TypeMap()
	types.RegisterType(&pgtype.Type{Name: "json", OID: pgtype.JSONOID,
		Codec: &pgtype.JSONCodec{Marshal: json.Marshal, Unmarshal: unmarshalJSON}})
	types.RegisterType(&pgtype.Type{Name: "jsonb", OID: pgtype.JSONBOID,
		Codec: &pgtype.JSONBCodec{Marshal: json.Marshal, Unmarshal: unmarshalJSON}})
	return nil
}

func unmarshalJSON(data []byte, v any) error {
	if raw, ok := v.(*json.RawMessage); ok {
		*raw = bytes.Clone(data)
		return nil
	}
	return json.Unmarshal(data, v)
}
