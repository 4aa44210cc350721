package handlers

import (
	"context"
	"time"

	"github.com/payments-api/payments-api/internal/api"
)

// GetHealth answers while the process serves; it touches nothing else, so an orchestrator
// does not restart a healthy process because the database blinked.
func (s *Server) GetHealth(ctx context.Context, _ api.GetHealthRequestObject) (api.GetHealthResponseObject, error) {
	return api.GetHealth200JSONResponse{HealthOKJSONResponse: api.HealthOKJSONResponse{Body: api.Health{Status: api.Ok}}}, nil
}

// GetReadiness answers 200 only while the database answers, so a load balancer stops sending
// traffic to a server that could not serve it. It asks over a connection of its own
// (Options.Readiness): a pool busy with requests is a process at work, not one to take out.
func (s *Server) GetReadiness(ctx context.Context, _ api.GetReadinessRequestObject) (api.GetReadinessResponseObject, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := s.ping(ctx); err != nil {
		s.logger.WarnContext(ctx, "readiness: database ping failed", "error", err)
		return nil, unavailable(retryAfterUnavailable, "The database is not answering.")
	}
	return api.GetReadiness200JSONResponse{HealthOKJSONResponse: api.HealthOKJSONResponse{Body: api.Health{Status: api.Ok}}}, nil
}
