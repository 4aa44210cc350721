package handlers

import (
	"bytes"
	"context"

	"github.com/labstack/echo/v4"
	"github.com/payments-api/payments-api/internal/api"
)

// routeTemplate names the route as the spec does ("/payments/{id}"). A request that matched
// no route is "unmatched": its path is the client's choice and must not become a series.
func (s *Server) routeTemplate(c echo.Context) string {
	if template, ok := s.contract.Template(c.Path()); ok {
		return template
	}
	return "unmatched"
}

// GetMetrics exports the server's metrics for a Prometheus scraper.
func (s *Server) GetMetrics(ctx context.Context, _ api.GetMetricsRequestObject) (api.GetMetricsResponseObject, error) {
	var body bytes.Buffer
	if err := s.metrics.WriteText(ctx, &body); err != nil {
		return nil, err
	}
	return api.GetMetrics200TextplainVersion004Response{Body: &body, ContentLength: int64(body.Len())}, nil
}
