// Package api is generated from api/openapi.yaml: request and response types, the strict
// server interface that internal/handlers implements, the embedded spec, and the API
// reference rendered from it. Never edit the generated files; change the contract and run
// `go generate ./...`.
package api

//go:generate go tool oapi-codegen -config oapi-codegen.yaml ../../api/openapi.yaml
//go:generate cp ../../api/openapi.yaml openapi.yaml
//go:generate sh -c "test -x ../../.ci/lint/node_modules/.bin/redocly || npm --prefix ../../.ci/lint ci --loglevel=warn"
//go:generate env REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true ../../.ci/lint/node_modules/.bin/redocly build-docs ../../api/openapi.yaml --inlineBundle --output reference.html
