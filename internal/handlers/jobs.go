package handlers

import (
	"context"

	"github.com/payments-api/payments-api/internal/api"
	"github.com/payments-api/payments-api/internal/reports"
)

// GetJob returns a job, with Retry-After while it has not finished.
func (s *Server) GetJob(ctx context.Context, req api.GetJobRequestObject) (api.GetJobResponseObject, error) {
	job, err := s.reports.GetJob(ctx, accountFrom(ctx).ID, req.Id)
	if err != nil {
		return nil, err
	}
	res := api.GetJob200JSONResponse{Body: reports.JobResource(job)}
	if !reports.Finished(job) {
		after := pollAfter
		res.Headers.RetryAfter = &after
	}
	return res, nil
}

// ListJobs pages through the account's jobs, newest first.
func (s *Server) ListJobs(ctx context.Context, req api.ListJobsRequestObject) (api.ListJobsResponseObject, error) {
	params := reports.JobListParams{Page: s.page(req.Params.Limit, req.Params.StartingAfter), Status: (*string)(req.Params.Status)}
	rows, hasMore, err := s.reports.ListJobs(ctx, accountFrom(ctx).ID, params)
	if err != nil {
		return nil, err
	}
	data := make([]api.Job, 0, len(rows))
	for _, j := range rows {
		data = append(data, reports.JobResource(j))
	}
	return api.ListJobs200JSONResponse{Body: api.JobList{Data: data, HasMore: hasMore}}, nil
}

// CancelJob cancels a queued or running job; a finished one is 409.
func (s *Server) CancelJob(ctx context.Context, req api.CancelJobRequestObject) (api.CancelJobResponseObject, error) {
	job, err := s.reports.CancelJob(ctx, accountFrom(ctx).ID, req.Id)
	if err != nil {
		return nil, err
	}
	return api.CancelJob200JSONResponse{Body: reports.JobResource(job)}, nil
}
