package api

import _ "embed"

// SpecYAML is api/openapi.yaml byte for byte, served at GET /openapi.yaml.
// It is a generated copy because go:embed cannot reach outside this package's folder.
//
//go:embed openapi.yaml
var SpecYAML []byte
