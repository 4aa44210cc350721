package handlers

import (
	"fmt"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/payments-api/payments-api/internal/db"
)

// page is a list request's page: its limit, or the spec's default when it names none, after
// its cursor. The validator has already held the limit to the spec's minimum and maximum.
func (s *Server) page(limit *int, startingAfter *string) db.Page {
	p := db.Page{Limit: s.defaultPageLimit, StartingAfter: startingAfter}
	if limit != nil {
		p.Limit = *limit
	}
	return p
}

// defaultPageLimit is the default of the spec's shared Limit parameter, which every list
// takes: the spec documents it to clients, so the server reads it there rather than keep a
// copy that could drift.
func defaultPageLimit(spec *openapi3.T) (int, error) {
	param := spec.Components.Parameters["Limit"]
	if param == nil || param.Value == nil || param.Value.Schema == nil || param.Value.Schema.Value == nil {
		return 0, fmt.Errorf("spec: no components.parameters.Limit schema")
	}
	switch d := param.Value.Schema.Value.Default.(type) {
	case float64:
		if d >= 1 && d == float64(int(d)) {
			return int(d), nil
		}
	case int:
		if d >= 1 {
			return d, nil
		}
	}
	return 0, fmt.Errorf("spec: components.parameters.Limit has no positive integer default (%v)", param.Value.Schema.Value.Default)
}
