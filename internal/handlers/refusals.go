package handlers

import (
	"errors"
	"net"
	"net/http"
	"strconv"
)

// The errors the HTTP layer itself answers a request with, beside the domain's and the
// contract's. Like every failure they are rows of errorProblems: code that refuses a request
// returns one of them, and only the table decides what the problem looks like.

// unauthorizedError is a request without an API key that names an account: 401.
type unauthorizedError struct{ detail string }

func (e *unauthorizedError) Error() string { return "unauthorized: " + e.detail }

var (
	errNoAPIKey      = &unauthorizedError{"Send an API key as Authorization: Bearer <key>."}
	errUnknownAPIKey = &unauthorizedError{"The API key is unknown or revoked."}
)

// staleTagError is an If-Match that matches none of a resource's tags when its tag is not a
// version (a report's is its id): 412, with the tag that is current.
type staleTagError struct{ current string }

func (e *staleTagError) Error() string { return "precondition failed; current tag is " + e.current }

// notFoundError is a 404 that says more than that the resource is not there.
type notFoundError struct{ detail string }

func (e *notFoundError) Error() string { return "not found: " + e.detail }

// unavailableError is a request the server could not serve now but may serve when it is sent
// again, after retryAfter seconds: 503 service-unavailable.
type unavailableError struct {
	detail     string
	retryAfter int
}

func (e *unavailableError) Error() string { return "service unavailable: " + e.detail }

// retryAfterUnavailable is the Retry-After, in seconds, of a 503 service-unavailable: long
// enough for a database restart or failover to be noticed, short enough not to lose clients.
const retryAfterUnavailable = 5

// unavailable is the error every 503 service-unavailable is answered from, whatever made the
// server unable to serve (the database, a shutdown, a client that left, an injected fault):
// detail says which, retryAfter (seconds) when to send the request again.
func unavailable(retryAfter int, detail string) *unavailableError {
	return &unavailableError{detail: detail, retryAfter: retryAfter}
}

func unavailableProblem(e *unavailableError) *problem {
	p := newProblem(probServiceUnavailable, e.detail)
	p.Headers.Set("Retry-After", strconv.Itoa(e.retryAfter))
	return p
}

// bodyError is a request body that could not be read whole: larger than the limit, too slow
// to arrive, or cut off. The cause stays private (it is not unwrapped): a read that timed out
// is the client's doing, not a database's.
type bodyError struct{ cause error }

func (e *bodyError) Error() string { return "read request body: " + e.cause.Error() }

func bodyProblem(e *bodyError) *problem {
	var tooLarge *http.MaxBytesError
	var netErr net.Error
	switch {
	case errors.As(e.cause, &tooLarge):
		return newProblem(probPayloadTooLarge, "The request body is larger than the limit of "+humanBytes(tooLarge.Limit)+".")
	case errors.As(e.cause, &netErr) && netErr.Timeout():
		return newProblem(probInvalidRequest, "The request body did not arrive within the read timeout.")
	}
	return newProblem(probInvalidRequest, "The request body could not be read.")
}
