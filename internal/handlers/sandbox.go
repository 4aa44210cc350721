package handlers

// The /test/* operations: helpers the spec marks x-sandbox-only, so that a client's tests can
// make an account of their own and hurry what would otherwise take time (key expiry, webhook
// retries, queued jobs). A production server never routes them.

import (
	"context"

	"github.com/payments-api/payments-api/internal/accounts"
	"github.com/payments-api/payments-api/internal/api"
	"github.com/payments-api/payments-api/internal/jobs"
)

// errTestAccountsClosed answers POST /test/accounts while OPEN_TEST_ACCOUNTS=false.
var errTestAccountsClosed = &notFoundError{"Throwaway accounts are turned off on this server."}

// CreateTestAccount makes a throwaway account, without authentication, so each test of a
// client can run in an account of its own, with quotas of its own if it asks (within the
// server's: see ownQuotas). The rate limiter bounds it per client address (the TestAccounts
// policy); OPEN_TEST_ACCOUNTS=false makes it a 404.
func (s *Server) CreateTestAccount(ctx context.Context, req api.CreateTestAccountRequestObject) (api.CreateTestAccountResponseObject, error) {
	if !s.openTestAccounts {
		return nil, errTestAccountsClosed
	}
	var asked *api.TestAccountRateLimitOverrides
	if req.Body != nil {
		asked = req.Body.RateLimits
	}
	quotas, err := s.limits.ownQuotas(asked)
	if err != nil {
		return nil, err
	}
	acct, err := accounts.CreateTestAccount(ctx, s.pool, quotas)
	if err != nil {
		return nil, err
	}
	return api.CreateTestAccount201JSONResponse{Body: api.TestAccount{
		AccountId:  acct.AccountID,
		ApiKey:     acct.APIKey,
		RateLimits: s.limits.accountRateLimits(quotas),
	}}, nil
}

// ExpireIdempotencyKeys expires the caller's keys now.
func (s *Server) ExpireIdempotencyKeys(ctx context.Context, _ api.ExpireIdempotencyKeysRequestObject) (api.ExpireIdempotencyKeysResponseObject, error) {
	n, err := s.idempotency.ExpireAccount(ctx, accountFrom(ctx).ID)
	if err != nil {
		return nil, err
	}
	return api.ExpireIdempotencyKeys200JSONResponse{Body: api.TestHelperResult{Affected: int(n)}}, nil
}

// RetryWebhookDeliveriesNow makes the caller's scheduled webhook retries due now.
func (s *Server) RetryWebhookDeliveriesNow(ctx context.Context, _ api.RetryWebhookDeliveriesNowRequestObject) (api.RetryWebhookDeliveriesNowResponseObject, error) {
	n, err := s.webhooks.RetryNow(ctx, accountFrom(ctx).ID)
	if err != nil {
		return nil, err
	}
	return api.RetryWebhookDeliveriesNow200JSONResponse{Body: api.TestHelperResult{Affected: int(n)}}, nil
}

// RunJobsNow makes the caller's queued report jobs due now and queues a sweep.
func (s *Server) RunJobsNow(ctx context.Context, _ api.RunJobsNowRequestObject) (api.RunJobsNowResponseObject, error) {
	n, err := s.reports.RunNow(ctx, accountFrom(ctx).ID, jobs.SweepArgs{})
	if err != nil {
		return nil, err
	}
	return api.RunJobsNow200JSONResponse{Body: api.TestHelperResult{Affected: int(n)}}, nil
}
