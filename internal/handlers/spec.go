package handlers

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/payments-api/payments-api/internal/api"
)

// GetOpenAPIYAML serves the contract byte for byte as it is in api/openapi.yaml.
func (s *Server) GetOpenAPIYAML(ctx context.Context, _ api.GetOpenAPIYAMLRequestObject) (api.GetOpenAPIYAMLResponseObject, error) {
	return api.GetOpenAPIYAML200ApplicationyamlResponse{
		Body:          bytes.NewReader(api.SpecYAML),
		ContentLength: int64(len(api.SpecYAML)),
	}, nil
}

// GetOpenAPIJSON serves the same contract as JSON.
func (s *Server) GetOpenAPIJSON(ctx context.Context, _ api.GetOpenAPIJSONRequestObject) (api.GetOpenAPIJSONResponseObject, error) {
	return api.GetOpenAPIJSON200JSONResponse{Body: s.specJSON}, nil
}

// GetAPIReference serves the contract rendered as one self-contained HTML page.
func (s *Server) GetAPIReference(ctx context.Context, _ api.GetAPIReferenceRequestObject) (api.GetAPIReferenceResponseObject, error) {
	return api.GetAPIReference200TexthtmlResponse{APIReferenceTexthtmlResponse: apiReference()}, nil
}

// GetRoot serves the API reference at the root too, for a browser pointed at the server.
func (s *Server) GetRoot(ctx context.Context, _ api.GetRootRequestObject) (api.GetRootResponseObject, error) {
	return api.GetRoot200TexthtmlResponse{APIReferenceTexthtmlResponse: apiReference()}, nil
}

func apiReference() api.APIReferenceTexthtmlResponse {
	return api.APIReferenceTexthtmlResponse{
		Body:          bytes.NewReader(api.ReferenceHTML),
		ContentLength: int64(len(api.ReferenceHTML)),
	}
}

// loadSpecJSON is the embedded spec as the JSON value GET /openapi.json answers with, made on
// the first call and shared after that (nothing writes to it), as contract.Load is.
var loadSpecJSON = sync.OnceValues(specAsJSON)

func specAsJSON() (map[string]any, error) {
	spec, err := api.GetSpec()
	if err != nil {
		return nil, fmt.Errorf("load embedded spec: %w", err)
	}
	raw, err := json.Marshal(spec)
	if err != nil {
		return nil, fmt.Errorf("marshal spec: %w", err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("unmarshal spec: %w", err)
	}
	return m, nil
}
