package handlers

import (
	"bytes"
	"context"
	_ "embed"

	"github.com/payments-api/payments-api/internal/api"
)

// labHTML is the race lab: one page, its script and styles inline, so it works offline and
// a learner can read all of it with "view source". It calls the API from the browser, on
// the page's own origin, in throwaway accounts.
//
//go:embed lab.html
var labHTML []byte

// GetLab serves the race lab. The spec marks it x-sandbox-only: production never routes it.
func (s *Server) GetLab(ctx context.Context, _ api.GetLabRequestObject) (api.GetLabResponseObject, error) {
	return api.GetLab200TexthtmlResponse{Body: bytes.NewReader(labHTML), ContentLength: int64(len(labHTML))}, nil
}
