// Package clients holds the clients generated from api/openapi.yaml, each in the layout its
// users expect: go/ is a Go module of its own (oapi-codegen, the server's pinned version) and
// typescript/ an npm package (openapi-typescript types for openapi-fetch). This package only
// regenerates them with the rest of the code: `go generate ./...` at the root.
package clients

//go:generate go -C go generate ./...
//go:generate sh -c "test -x typescript/node_modules/.bin/openapi-typescript || npm --prefix typescript ci --loglevel=warn"
//go:generate npm --prefix typescript run --silent generate
