package api

import _ "embed"

// SpecYAML is api/openapi.yaml byte for byte, served at GET /openapi.yaml.
// It is a generated copy because go:embed cannot reach outside this package's folder.
//
//go:embed openapi.yaml
var SpecYAML []byte

// ReferenceHTML is the contract rendered by Redoc (redocly build-docs, pinned in .ci/lint)
// into one HTML page with its scripts and styles inline, served at GET /docs and GET /.
//
//go:embed reference.html
var ReferenceHTML []byte
