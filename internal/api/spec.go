package api

import (
	_ "embed"

	"github.com/getkin/kin-openapi/openapi3"
)

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

// GetSpec parses SpecYAML: the whole contract, with the operations the generated code
// leaves out (the HEAD and OPTIONS of exclude-tags in oapi-codegen.yaml). oapi-codegen's
// embedded spec would lack them, so it is not generated.
func GetSpec() (*openapi3.T, error) {
	return openapi3.NewLoader().LoadFromData(SpecYAML)
}
