// Package api is generated from api/openapi.yaml: request and response types, the strict
// server interface that internal/handlers implements, and the embedded spec. Never edit the
// generated files; change the contract and run `go generate ./...`.
package api

//go:generate go tool oapi-codegen -config oapi-codegen.yaml ../../api/openapi.yaml
//go:generate cp ../../api/openapi.yaml openapi.yaml
