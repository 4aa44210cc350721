// Package client is what ogen generates from api/openapi.yaml with its default features: a
// client, and the server side ogen adds by default. scripts/test generates it afresh on every
// run and builds it, to show that a generator unrelated to ours (oapi-codegen for the server
// and the Go client, openapi-typescript for the TypeScript one) reads the whole contract. The
// generated files are gitignored: only this one is committed.
package client

// One package of each module the generated files import: importing them here as well keeps
// go.mod the same whether `go mod tidy` runs before or after the client is generated.
import (
	_ "github.com/go-faster/errors"
	_ "github.com/go-faster/jx"
	_ "github.com/ogen-go/ogen/otelogen"
	_ "go.opentelemetry.io/otel"
	_ "go.opentelemetry.io/otel/metric"
	_ "go.opentelemetry.io/otel/trace"
)
