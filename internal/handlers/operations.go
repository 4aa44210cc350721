package handlers

import (
	"bytes"
	"context"
	"html/template"
	"time"

	"github.com/payments-api/payments-api/internal/api"
	"github.com/payments-api/payments-api/internal/domain"
)

// GetHealth answers while the process serves; it touches nothing else, so an orchestrator
// does not restart a healthy process because the database blinked.
func (s *Server) GetHealth(ctx context.Context, _ api.GetHealthRequestObject) (api.GetHealthResponseObject, error) {
	return api.GetHealth200JSONResponse{HealthOKJSONResponse: api.HealthOKJSONResponse{Body: api.Health{Status: api.Ok}}}, nil
}

// GetReadiness answers 200 only while the database answers, so a load balancer stops sending
// traffic to a server that could not serve it.
func (s *Server) GetReadiness(ctx context.Context, _ api.GetReadinessRequestObject) (api.GetReadinessResponseObject, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := s.pool.Ping(ctx); err != nil {
		s.logger.WarnContext(ctx, "readiness: database ping failed", "error", err)
		return nil, unavailable(retryAfterUnavailable, "The database is not answering.")
	}
	return api.GetReadiness200JSONResponse{HealthOKJSONResponse: api.HealthOKJSONResponse{Body: api.Health{Status: api.Ok}}}, nil
}

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

var problemPage = template.Must(template.New("problem").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{.Title}}</title></head>
<body><h1>{{.Title}}</h1><p>HTTP status {{.Status}}.</p><p>{{.Description}}</p>
<p>The problem's <code>type</code> is <code>{{.URI}}</code>. See <a href="/openapi.yaml">the API contract</a>.</p></body></html>
`))

// GetProblemType makes every problem `type` URI resolve to a page a human can read.
func (s *Server) GetProblemType(ctx context.Context, req api.GetProblemTypeRequestObject) (api.GetProblemTypeResponseObject, error) {
	t, ok := problemTypes[req.Problem]
	if !ok {
		return nil, domain.ErrNotFound
	}
	var page bytes.Buffer
	if err := problemPage.Execute(&page, t); err != nil {
		return nil, err
	}
	return api.GetProblemType200TexthtmlResponse{Body: &page, ContentLength: int64(page.Len())}, nil
}

// GetAccount answers which account the API key belongs to.
func (s *Server) GetAccount(ctx context.Context, _ api.GetAccountRequestObject) (api.GetAccountResponseObject, error) {
	acct := accountFrom(ctx)
	return api.GetAccount200JSONResponse{Body: api.Account{Id: acct.ID, CreatedAt: acct.CreatedAt.UTC()}}, nil
}
