package app

import (
	"cmp"
	"net/netip"
	"time"

	"github.com/payments-api/payments-api/internal/metrics"
	"github.com/payments-api/payments-api/internal/processor"
	"github.com/payments-api/payments-api/internal/ratelimit"
	oteltrace "go.opentelemetry.io/otel/trace"
)

// Config is what the application is built from, as plain values: cmd/payments-api reads
// them from the environment, a test writes them down.
type Config struct {
	// DatabaseURL is the pool requests and jobs share. DatabaseDirectURL, when set, says
	// DatabaseURL goes through a transaction pooler and names the same database without it.
	DatabaseURL            string
	DatabaseDirectURL      string
	DatabaseConnectTimeout time.Duration // how long start-up waits for an unreachable database
	DatabaseFailoverWait   time.Duration // how long a request waits out an unavailable database (db.WithFailoverWait)
	DemoAPIKeys            []string      // each seeded as its own account
	Sandbox                bool          // RUN_MODE=sandbox; production accepts only DemoAPIKeys
	FaultInjection         bool
	OpenTestAccounts       bool

	RequestTimeout   time.Duration
	ProcessorLatency time.Duration
	IdempotencyTTL   time.Duration
	APIKeyCacheSize  int
	APIKeyCacheTTL   time.Duration
	CORSOrigins      []string
	TrustedProxies   []netip.Prefix

	WebhookAllowPrivateNetworks bool
	WebhookRetrySchedule        []time.Duration
	WebhookTimeout              time.Duration
	WebhookWorkers              int

	// Work says this process runs jobs (PROCESS_ROLE is not api); without it the job client
	// only enqueues and cancels.
	Work            bool
	JobWorkers      int
	JobTimeout      time.Duration
	JobRescueAfter  time.Duration
	ReportRetention time.Duration
	EventRetention  time.Duration

	// Tracing receives the spans of requests, statements, jobs and webhook deliveries; nil
	// records none (cmd/payments-api builds it when OTEL_EXPORTER_OTLP_ENDPOINT is set).
	Tracing oteltrace.TracerProvider
}

// DirectDatabaseURL is where what needs a session of its own goes: migrations (a
// session-level advisory lock), creating the database, and River's LISTEN. A transaction
// pooler hands each transaction whichever server connection is free, so none of those
// would hold.
func (c Config) DirectDatabaseURL() string { return cmp.Or(c.DatabaseDirectURL, c.DatabaseURL) }

// RateLimitsFunc builds the rate limits once the metrics exist (a shared limiter reports its
// fallbacks to them); release frees what they hold. cmd/payments-api builds them from its
// environment (Redis or memory); a test hands over limits of its choosing.
type RateLimitsFunc func(*metrics.Metrics) (limits *ratelimit.Limits, release func(), err error)

// Option changes a part of the application that configuration does not reach; tests use
// them.
type Option func(*options)

type options struct {
	processor processor.Processor
}

// WithProcessor charges cards with p instead of the simulated processor.
func WithProcessor(p processor.Processor) Option {
	return func(o *options) { o.processor = p }
}

func newOptions(cfg Config, opts []Option) options {
	o := options{processor: processor.Simulated{Latency: cfg.ProcessorLatency}}
	for _, opt := range opts {
		opt(&o)
	}
	return o
}
