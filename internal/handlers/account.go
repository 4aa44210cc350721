package handlers

import (
	"context"
	"errors"

	"github.com/payments-api/payments-api/internal/accounts"
	"github.com/payments-api/payments-api/internal/api"
	"github.com/payments-api/payments-api/internal/domain"
)

// GetAccount answers which account the API key belongs to.
func (s *Server) GetAccount(ctx context.Context, _ api.GetAccountRequestObject) (api.GetAccountResponseObject, error) {
	acct := accountFrom(ctx)
	return api.GetAccount200JSONResponse{Body: api.Account{Id: acct.ID, CreatedAt: acct.CreatedAt.UTC()}}, nil
}

// DeleteAccount deletes the caller's account and all its data, and makes this server forget
// its keys at once.
func (s *Server) DeleteAccount(ctx context.Context, _ api.DeleteAccountRequestObject) (api.DeleteAccountResponseObject, error) {
	id := accountFrom(ctx).ID
	err := accounts.Delete(ctx, s.pool, id)
	if errors.Is(err, domain.ErrNotFound) {
		// Deleted meanwhile, by a request this process's key cache had not heard of: the key
		// is revoked, as it is for every request from now on.
		return nil, errUnknownAPIKey
	}
	if err != nil {
		return nil, err
	}
	s.apiKeys.ForgetAccount(id)
	return api.DeleteAccount204Response{}, nil
}
