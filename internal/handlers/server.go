// Package handlers is the HTTP adapter: it implements the strict server interface generated
// from api/openapi.yaml, plus the middleware (request ids, logging, auth, validation) and the
// one error handler that turns every failure into an RFC 9457 problem. Handlers are thin: they
// parse the typed request, call the package that owns the work, and convert the result.
// It may import api, domain, db, metrics and the service packages; nothing imports it but
// internal/app, and cmd for ErrShutdown.
package handlers

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"net/netip"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"github.com/payments-api/payments-api/internal/accounts"
	"github.com/payments-api/payments-api/internal/api"
	"github.com/payments-api/payments-api/internal/contract"
	"github.com/payments-api/payments-api/internal/events"
	"github.com/payments-api/payments-api/internal/idempotency"
	"github.com/payments-api/payments-api/internal/metrics"
	"github.com/payments-api/payments-api/internal/payments"
	"github.com/payments-api/payments-api/internal/ratelimit"
	"github.com/payments-api/payments-api/internal/reports"
	"github.com/payments-api/payments-api/internal/webhooks"
	oteltrace "go.opentelemetry.io/otel/trace"
)

// MaxBodyBytes is the largest request body accepted (413 beyond).
const MaxBodyBytes = 1 << 20

// DefaultRequestTimeout is Options.RequestTimeout when it is left zero.
const DefaultRequestTimeout = 30 * time.Second

// Options is what the server needs from the wiring (internal/app).
type Options struct {
	Pool *pgxpool.Pool
	// Readiness pings the database for /readyz, over a connection apart from Pool's (nil:
	// Pool's Ping).
	Readiness   func(context.Context) error
	Logger      *slog.Logger
	Payments    *payments.Service
	Idempotency *idempotency.Store
	Events      *events.Service
	Webhooks    *webhooks.Service
	// CORSAllowedOrigins are the browser origins allowed to call the API; "*" allows any.
	CORSAllowedOrigins []string

	// RequestTimeout is every request's deadline, carried by its context into every database
	// call; a request that runs out of it waiting for the database answers 503.
	RequestTimeout time.Duration
	// FailoverWait is how long a request waits for a database that is unavailable (a
	// failover) as its transaction begins or as it reads, before it answers 503; 0 waits not
	// at all (db.WithFailoverWait).
	FailoverWait time.Duration
	// Draining ends when the server starts shutting down: bodies still arriving a second
	// later are cut short (503), so a slow client cannot hold the shutdown for its whole
	// timeout.
	// Nil means never.
	Draining context.Context
	// RateLimits are the quotas the server enforces (required; a nil Limiter enforces none).
	RateLimits *ratelimit.Limits
	APIKeys    *accounts.Authenticator
	Metrics    *metrics.Metrics

	Reports *reports.Service
	// Sandbox serves the operations the spec marks x-sandbox-only (test helpers, /metrics).
	// Without it they answer 404 like any unknown path, and no Prefer fault is applied.
	Sandbox bool
	// FaultInjection honours Prefer: fault=... and latency=... (see injectFaults), in the
	// sandbox only.
	FaultInjection bool
	// OpenTestAccounts lets anyone create a throwaway account (POST /test/accounts).
	OpenTestAccounts bool
	// TrustedProxies are the proxies in front of the server whose X-Forwarded-For it
	// believes, so the per-address limits see clients, not the proxy. None: the
	// connection's address is the client's.
	TrustedProxies []netip.Prefix
	// TracerProvider records a span per request, with its phases as children; nil traces
	// nothing, at no cost.
	TracerProvider oteltrace.TracerProvider
}

// Server implements api.StrictServerInterface.
type Server struct {
	pool             *pgxpool.Pool
	ping             func(context.Context) error
	logger           *slog.Logger
	payments         *payments.Service
	idempotency      *idempotency.Store
	charges          *idempotency.Gate // the creates charging at once (idempotency.Gate)
	events           *events.Service
	webhooks         *webhooks.Service
	requestTimeout   time.Duration
	failoverWait     time.Duration
	draining         context.Context
	apiKeys          *accounts.Authenticator
	metrics          *metrics.Metrics
	reports          *reports.Service
	limits           *rateLimiter
	specJSON         map[string]any
	defaultPageLimit int             // a list's page size when the request names none (see page)
	publicPaths      map[string]bool // "/problems/:problem": paths whose operations all have `security: []`
	contract         *contract.Contract
	faultInjection   bool
	openTestAccounts bool
	tracer           oteltrace.Tracer // nil: no spans
}

var _ api.StrictServerInterface = (*Server)(nil)

// New builds the echo instance with every route from the spec and the middleware in order.
func New(opts Options) (*echo.Echo, error) {
	if opts.APIKeys == nil || opts.Metrics == nil || opts.RateLimits == nil {
		return nil, errors.New("handlers: Options.APIKeys, Options.Metrics and Options.RateLimits are required")
	}
	if opts.RateLimits.Default.Quota < 1 || opts.RateLimits.Writes.Quota < 1 {
		return nil, errors.New("handlers: Options.RateLimits needs the Default and Writes policies, even without a Limiter")
	}
	load := contract.Load
	if !opts.Sandbox {
		load = contract.LoadProduction // the sandbox's operations are never routed
	}
	compiled, err := load() // every schema compiled here, once
	if err != nil {
		return nil, err
	}
	spec := compiled.Spec()
	specJSON, err := loadSpecJSON() // the whole contract, as /openapi.json, in every mode
	if err != nil {
		return nil, err
	}
	pageLimit, err := defaultPageLimit(spec)
	if err != nil {
		return nil, err
	}
	s := &Server{
		pool:             opts.Pool,
		ping:             opts.Pool.Ping,
		logger:           opts.Logger,
		payments:         opts.Payments,
		idempotency:      opts.Idempotency,
		charges:          idempotency.NewGate(opts.Pool),
		events:           opts.Events,
		webhooks:         opts.Webhooks,
		requestTimeout:   cmp.Or(opts.RequestTimeout, DefaultRequestTimeout),
		failoverWait:     opts.FailoverWait,
		draining:         opts.Draining,
		apiKeys:          opts.APIKeys,
		metrics:          opts.Metrics,
		reports:          opts.Reports,
		limits:           newRateLimiter(*opts.RateLimits, opts.Metrics),
		specJSON:         specJSON,
		defaultPageLimit: pageLimit,
		publicPaths:      publicPaths(spec),
		contract:         compiled,
		faultInjection:   opts.Sandbox && opts.FaultInjection,
		openTestAccounts: opts.OpenTestAccounts,
	}
	if opts.TracerProvider != nil {
		s.tracer = opts.TracerProvider.Tracer(instrumentation)
	}
	if s.draining == nil {
		s.draining = context.Background()
	}
	if opts.Readiness != nil {
		s.ping = opts.Readiness
	}

	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = s.handleError
	e.IPExtractor = ratelimit.ClientIPExtractor(opts.TrustedProxies) // never echo's default, which believes any header
	e.Use(chainOnce(
		dropLostResponses, // first: it closes connections once everything else is done
		s.startRequest,    // outside the log, so the log still sees the context the client left
		s.observeRequests, // metrics and the log line, after the error handler has answered
		middleware.RecoverWithConfig(middleware.RecoverConfig{LogErrorFunc: s.logPanic, DisableErrorHandler: true}),
		optionsOnRoutes(compiled),
		cors(opts.CORSAllowedOrigins),
		answerMethods,
		findOperation(compiled), // 404 and 405 before anything a route's operation would answer
		s.authenticate,
		s.limits.limitAccount,
		s.injectFaults(s.limits),
		s.readBody(MaxBodyBytes),
		validateRequests(),
	))
	api.RegisterHandlers(withHead{servedRoutes{e, compiled}}, api.NewStrictHandler(s, nil))
	return e, nil
}

// chainOnce composes middleware into one chain, built once. echo v4 applies e.Use's middleware
// anew on every request, so each layer's closure (and whatever its constructor sets up) would
// be built again for every request: an allocation per layer, and its collection, before the
// request does anything. The chain ends in the handler that e.Use hands it for the request
// (the route's, behind any middleware added later), carried in the echo.Context; the layers
// keep no state of their own per request, so building them once changes nothing else.
func chainOnce(middleware ...echo.MiddlewareFunc) echo.MiddlewareFunc {
	h := func(c echo.Context) error { return c.Handler()(c) }
	for i := len(middleware) - 1; i >= 0; i-- {
		h = middleware[i](h)
	}
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			c.SetHandler(next)
			return h(c)
		}
	}
}

// publicPaths lists the paths whose operations the spec all exempts from authentication
// (`security: []`), keyed the way echo names routes ("/problems/:problem"), so the spec stays
// the one place that decides. A wrong method on such a path is answered 405, not 401.
func publicPaths(spec *openapi3.T) map[string]bool {
	public := map[string]bool{}
	for path, item := range spec.Paths.Map() {
		all := true
		for _, op := range item.Operations() {
			all = all && op.Security != nil && len(*op.Security) == 0
		}
		public[contract.EchoPath(path)] = all
	}
	return public
}
