package contract

import (
	"fmt"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/payments-api/payments-api/internal/api"
)

// SandboxOnlyExtension marks, in the spec, an operation that only the sandbox serves
// (RUN_MODE=sandbox): test helpers, and /metrics on the API port.
const SandboxOnlyExtension = "x-sandbox-only"

// SandboxOnly reports whether the spec marks op as served by the sandbox alone.
func SandboxOnly(op *openapi3.Operation) bool {
	only, _ := op.Extensions[SandboxOnlyExtension].(bool)
	return only
}

// LoadProduction returns the contract a production server serves: the embedded spec without
// the operations marked x-sandbox-only. To its router they never existed, so a request for
// one is answered exactly as a path nobody wrote (404, no Allow, before authentication),
// which tells a prober nothing. Like Load, it is built once and shared.
func LoadProduction() (*Contract, error) { return loadProduction() }

var loadProduction = sync.OnceValues(func() (*Contract, error) {
	spec, err := api.GetSpec()
	if err != nil {
		return nil, fmt.Errorf("load embedded spec: %w", err)
	}
	return New(withoutSandbox(spec))
})

// withoutSandbox returns a copy of spec's paths without the sandbox-only operations (and
// without a path left with none); spec itself is not changed.
func withoutSandbox(spec *openapi3.T) *openapi3.T {
	served := *spec
	served.Paths = openapi3.NewPaths()
	for path, item := range spec.Paths.Map() {
		kept := *item
		for method, op := range item.Operations() {
			if SandboxOnly(op) {
				kept.SetOperation(method, nil)
			}
		}
		if len(kept.Operations()) > 0 {
			served.Paths.Set(path, &kept)
		}
	}
	return &served
}
