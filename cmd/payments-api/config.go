package main

import (
	"cmp"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/caarlos0/env/v11"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/payments-api/payments-api/internal/ratelimit"
	"github.com/payments-api/payments-api/internal/telemetry"
	"github.com/payments-api/payments-api/internal/webhooks"
	"github.com/redis/go-redis/v9"
)

// config is the whole configuration, read from environment variables. Every variable has a
// default that works on a developer machine; docs/configuration.md lists them.
type config struct {
	DatabaseURL            string        `env:"DATABASE_URL" envDefault:"postgres://postgres@localhost:5432/payments?sslmode=disable"`
	DatabaseConnectTimeout time.Duration `env:"DATABASE_CONNECT_TIMEOUT" envDefault:"30s"`
	DatabaseFailoverWait   time.Duration `env:"DATABASE_FAILOVER_WAIT" envDefault:"3s"`
	// DatabaseDirectURL, when set, says DATABASE_URL goes through a transaction pooler
	// (PgBouncer) and names the same database without it: see app.Config.DirectDatabaseURL.
	DatabaseDirectURL string `env:"DATABASE_DIRECT_URL"`
	// DatabasePoolerPreparedStatements says that pooler keeps each client's named prepared
	// statements: whichever server connection it lends (PgBouncer 1.21 or later, with
	// max_prepared_statements above 0, its default from 1.24), or because it lends one for as
	// long as the client stays connected (PgBouncer's session pooling). pgx's default exec
	// mode may then go through it.
	DatabasePoolerPreparedStatements bool   `env:"DATABASE_POOLER_PREPARED_STATEMENTS" envDefault:"false"`
	ListenAddr                       string `env:"LISTEN_ADDR" envDefault:":8080"`
	// DemoAPIKeys has no envDefault: the env library would put the default in place of an
	// empty value, and DEMO_API_KEYS= must mean "no key" (see applyModeDefaults).
	DemoAPIKeys      []string      `env:"DEMO_API_KEYS"`
	ShutdownTimeout  time.Duration `env:"SHUTDOWN_TIMEOUT" envDefault:"30s"`
	ProcessorLatency time.Duration `env:"PROCESSOR_LATENCY" envDefault:"0s"`
	IdempotencyTTL   time.Duration `env:"IDEMPOTENCY_KEY_TTL" envDefault:"24h"`
	LogLevel         string        `env:"LOG_LEVEL" envDefault:"info"`

	// What one request and one connection may cost (see newHTTPServer).
	RequestTimeout    time.Duration `env:"REQUEST_TIMEOUT" envDefault:"30s"`
	ReadHeaderTimeout time.Duration `env:"READ_HEADER_TIMEOUT" envDefault:"5s"`
	ReadTimeout       time.Duration `env:"READ_TIMEOUT" envDefault:"15s"`
	WriteTimeout      time.Duration `env:"WRITE_TIMEOUT" envDefault:"35s"`
	IdleTimeout       time.Duration `env:"IDLE_TIMEOUT" envDefault:"60s"`
	MaxHeaderBytes    int           `env:"MAX_HEADER_BYTES" envDefault:"32768"`
	MaxConnections    int           `env:"MAX_CONNECTIONS" envDefault:"1000"`
	// MaxConnectionsPerIP defaults to 100, or to MAX_CONNECTIONS when that is lower (loadConfig).
	MaxConnectionsPerIP int `env:"MAX_CONNECTIONS_PER_IP" envDefault:"100"`

	WebhookAllowPrivateNetworks bool            `env:"WEBHOOK_ALLOW_PRIVATE_NETWORKS" envDefault:"false"`
	WebhookRetrySchedule        []time.Duration `env:"WEBHOOK_RETRY_SCHEDULE" envDefault:"5s,5m,30m,2h,5h,10h,14h,20h,24h"`
	WebhookTimeout              time.Duration   `env:"WEBHOOK_TIMEOUT" envDefault:"10s"`
	WebhookWorkers              int             `env:"WEBHOOK_WORKERS" envDefault:"20"`
	CORSOrigins                 []string        `env:"CORS_ALLOWED_ORIGINS" envDefault:"*"`
	TrustedProxies              []proxyRange    `env:"TRUSTED_PROXIES"`
	RedisURL                    string          `env:"REDIS_URL"`
	RateLimitDefault            ratelimit.Rate  `env:"RATE_LIMIT_DEFAULT" envDefault:"100/1s"`
	RateLimitWrites             ratelimit.Rate  `env:"RATE_LIMIT_WRITES" envDefault:"25/1s"`
	RateLimitUnauthenticated    ratelimit.Rate  `env:"RATE_LIMIT_UNAUTHENTICATED" envDefault:"30/10s"`
	RateLimitTestAccounts       ratelimit.Rate  `env:"RATE_LIMIT_TEST_ACCOUNTS" envDefault:"10/1m"`
	RateLimitDisabled           bool            `env:"RATE_LIMIT_DISABLED" envDefault:"false"`
	APIKeyCacheTTL              time.Duration   `env:"API_KEY_CACHE_TTL" envDefault:"10s"`
	APIKeyCacheSize             int             `env:"API_KEY_CACHE_SIZE" envDefault:"1000"`
	PprofAddr                   string          `env:"PPROF_ADDR"`

	ProcessRole     string        `env:"PROCESS_ROLE" envDefault:"all"`
	JobWorkers      int           `env:"JOB_WORKERS" envDefault:"4"`
	JobTimeout      time.Duration `env:"JOB_TIMEOUT" envDefault:"1m"`
	JobRescueAfter  time.Duration `env:"JOB_RESCUE_AFTER" envDefault:"2m"`
	ReportRetention time.Duration `env:"REPORT_RETENTION" envDefault:"168h"`
	EventRetention  time.Duration `env:"EVENT_RETENTION" envDefault:"720h"`

	// RunMode opens or shuts the sandbox's doors (see runMode); the next fields default by it.
	RunMode runMode `env:"RUN_MODE" envDefault:"sandbox"`
	// The sandbox: fault injection by Prefer, and throwaway accounts for anyone. Their
	// defaults, and METRICS_ADDR's, depend on RUN_MODE (applyModeDefaults), so they have no
	// envDefault; modeDefault marks them for refuseEmpty.
	FaultInjection   bool `env:"FAULT_INJECTION" modeDefault:"true in the sandbox, false in production"`
	OpenTestAccounts bool `env:"OPEN_TEST_ACCOUNTS" modeDefault:"true in the sandbox, false in production"`
	// MetricsAddr is a listener of its own for /metrics: none by default in the sandbox,
	// where the API's listener serves it, and 127.0.0.1:9090 in production.
	MetricsAddr string `env:"METRICS_ADDR" modeDefault:"none in the sandbox, 127.0.0.1:9090 in production"`
	// Telemetry is OpenTelemetry's standard variables: traces go out when an endpoint is set.
	Telemetry telemetry.Config
}

// proxyRange is one entry of TRUSTED_PROXIES: a proxy's address (127.0.0.1) or its network
// (10.0.0.0/8). The server believes X-Forwarded-For only from these (ratelimit.ClientIPExtractor).
type proxyRange struct{ netip.Prefix }

func (r *proxyRange) UnmarshalText(text []byte) error {
	s := strings.TrimSpace(string(text))
	if addr, err := netip.ParseAddr(s); err == nil {
		addr = addr.Unmap()
		r.Prefix = netip.PrefixFrom(addr, addr.BitLen())
		return nil
	}
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return fmt.Errorf("%q is neither an address (10.0.0.7) nor a network (10.0.0.0/8)", s)
	}
	if p.Bits() == 0 {
		// Every address a proxy: any client could name itself in X-Forwarded-For.
		return fmt.Errorf("%q trusts every address", s)
	}
	r.Prefix = p.Masked()
	return nil
}

// trustedProxies is TRUSTED_PROXIES as handlers.Options takes it.
func (c config) trustedProxies() []netip.Prefix {
	prefixes := make([]netip.Prefix, len(c.TrustedProxies))
	for i, r := range c.TrustedProxies {
		prefixes[i] = r.Prefix
	}
	return prefixes
}

// runMode is RUN_MODE. The sandbox is a demo for SDK authors and learners: a published key,
// throwaway accounts for anyone, faults on request, metrics beside the API. Production shuts
// each of those doors, so a deployment for other people cannot leave one open by omission.
type runMode string

const (
	modeSandbox    runMode = "sandbox"
	modeProduction runMode = "production"
)

// publishedDemoKey is the key the README gives everyone: the sandbox's default DEMO_API_KEYS.
const publishedDemoKey = "sk_test_demo"

// defaultMetricsAddr is where production serves /metrics, off the API port and the network.
const defaultMetricsAddr = "127.0.0.1:9090"

func (m *runMode) UnmarshalText(text []byte) error {
	switch mode := runMode(text); mode {
	case modeSandbox, modeProduction:
		*m = mode
		return nil
	}
	return fmt.Errorf("%q is not one of sandbox, production", text)
}

func (c config) sandbox() bool { return c.RunMode == modeSandbox }

// Process roles (PROCESS_ROLE): what one process does, so API and workers scale separately.
const (
	roleAll    = "all"    // serve HTTP and run jobs
	roleAPI    = "api"    // serve HTTP; jobs are only enqueued and canceled
	roleWorker = "worker" // run jobs; no HTTP listener
)

// pooled reports whether DATABASE_URL goes through a transaction pooler.
func (c config) pooled() bool { return c.DatabaseDirectURL != "" }

func (c config) serves() bool { return c.ProcessRole != roleWorker }
func (c config) works() bool  { return c.ProcessRole != roleAPI }

// loadConfig parses and validates environ (os.Environ's map). A bad value is an error that
// names the variable, so the process stops at once with a message an operator can act on.
func loadConfig(environ map[string]string) (config, error) {
	if err := refuseEmpty(reflect.TypeFor[config](), environ); err != nil {
		return config{}, err
	}
	cfg, err := env.ParseAsWithOptions[config](env.Options{Environment: environ})
	if err != nil {
		return config{}, nameVariables(err)
	}
	if _, set := environ["MAX_CONNECTIONS_PER_IP"]; !set {
		// Lowering MAX_CONNECTIONS alone must not fail on a default the operator never chose.
		cfg.MaxConnectionsPerIP = min(cfg.MaxConnectionsPerIP, cfg.MaxConnections)
	}
	modeErr := cfg.applyModeDefaults(environ)
	return cfg, errors.Join(modeErr, cfg.validate())
}

// applyModeDefaults fills in the settings whose default depends on RUN_MODE, from whether
// the variable is set at all (set and empty is a choice, unset is not), and refuses a
// production configuration that would open a sandbox door.
func (c *config) applyModeDefaults(environ map[string]string) error {
	_, keysSet := environ["DEMO_API_KEYS"]
	_, faultsSet := environ["FAULT_INJECTION"]
	_, accountsSet := environ["OPEN_TEST_ACCOUNTS"]
	_, metricsSet := environ["METRICS_ADDR"]
	if c.sandbox() {
		if !keysSet {
			c.DemoAPIKeys = []string{publishedDemoKey}
		}
		c.FaultInjection = c.FaultInjection || !faultsSet
		c.OpenTestAccounts = c.OpenTestAccounts || !accountsSet
		return nil
	}
	if !metricsSet {
		c.MetricsAddr = defaultMetricsAddr
	}
	var errs []error
	for _, door := range []struct {
		name string
		open bool
	}{
		{"FAULT_INJECTION", c.FaultInjection},
		{"OPEN_TEST_ACCOUNTS", c.OpenTestAccounts},
		{"WEBHOOK_ALLOW_PRIVATE_NETWORKS", c.WebhookAllowPrivateNetworks},
	} {
		if door.open {
			errs = append(errs, fmt.Errorf("%s: must not be true with RUN_MODE=production (it is a sandbox door)", door.name))
		}
	}
	// The README gives this key to everyone: in production it would open every door at once.
	if slices.Contains(c.DemoAPIKeys, publishedDemoKey) {
		errs = append(errs, fmt.Errorf("DEMO_API_KEYS: must not name %s with RUN_MODE=production (the README publishes it)", publishedDemoKey))
	}
	return errors.Join(errs...)
}

// nameVariables rewrites the env library's parse errors, which name the Go field
// ("ShutdownTimeout"), to name the variable the operator set (SHUTDOWN_TIMEOUT).
func nameVariables(err error) error {
	var agg env.AggregateError
	if !errors.As(err, &agg) {
		return err
	}
	errs := make([]error, 0, len(agg.Errors))
	for _, e := range agg.Errors {
		var pe env.ParseError
		if errors.As(e, &pe) {
			if name, ok := variableOf(reflect.TypeFor[config](), pe.Name); ok {
				e = fmt.Errorf("%s: %w", name, pe.Err)
			}
		}
		errs = append(errs, e)
	}
	return errors.Join(errs...)
}

// refuseEmpty refuses each variable of t (and of the structs it holds) that has a default
// and is set but empty. The env library takes an empty value for an unset one and puts the
// default in its place, so a manifest whose ${...} came out empty would run on a default its
// operator never chose: RUN_MODE= on the sandbox, with every door open, LISTEN_ADDR= on every
// interface, DATABASE_URL= on a local database it creates, CORS_ALLOWED_ORIGINS= with any
// origin allowed; FAULT_INJECTION= in production, with the doors open again. A variable
// whose empty value means something (DEMO_API_KEYS=, no key) has no default.
func refuseEmpty(t reflect.Type, environ map[string]string) error {
	var errs []error
	for _, f := range reflect.VisibleFields(t) {
		name, def := f.Tag.Get("env"), cmp.Or(f.Tag.Get("envDefault"), f.Tag.Get("modeDefault"))
		if value, set := environ[name]; name != "" && def != "" && set && value == "" {
			errs = append(errs, fmt.Errorf("%s: set but empty; unset it for its default (%s)", name, def))
		}
		if f.Type.Kind() == reflect.Struct && name == "" {
			errs = append(errs, refuseEmpty(f.Type, environ))
		}
	}
	return errors.Join(errs...)
}

// variableOf is the variable the field named field is read from, in t or in a struct it
// holds (Telemetry's OTEL_ variables).
func variableOf(t reflect.Type, field string) (string, bool) {
	for _, f := range reflect.VisibleFields(t) {
		if f.Name == field && f.Tag.Get("env") != "" {
			return f.Tag.Get("env"), true
		}
		if f.Type.Kind() == reflect.Struct && f.Tag.Get("env") == "" {
			if name, ok := variableOf(f.Type, field); ok {
				return name, true
			}
		}
	}
	return "", false
}

func (c config) validate() error {
	var errs []error
	errs = append(errs, c.validateDatabase()...)
	if c.Telemetry.BatchDelayMillis <= 0 { // the exporter's timer would fire without pause
		errs = append(errs, fmt.Errorf("OTEL_BSP_SCHEDULE_DELAY: must be a positive number of milliseconds, got %d", c.Telemetry.BatchDelayMillis))
	}
	if c.DatabaseConnectTimeout <= 0 {
		errs = append(errs, fmt.Errorf("DATABASE_CONNECT_TIMEOUT: must be positive, got %s", c.DatabaseConnectTimeout))
	}
	if c.DatabaseFailoverWait < 0 {
		errs = append(errs, fmt.Errorf("DATABASE_FAILOVER_WAIT: must be at least 0, got %s", c.DatabaseFailoverWait))
	}
	if _, _, err := net.SplitHostPort(c.ListenAddr); err != nil {
		errs = append(errs, fmt.Errorf("LISTEN_ADDR: %w", err))
	}
	for _, key := range c.DemoAPIKeys {
		if len(key) < 8 || !printableASCII(key) {
			errs = append(errs, fmt.Errorf("DEMO_API_KEYS: %q is not at least 8 printable ASCII characters without spaces", key))
		}
	}
	if c.ShutdownTimeout <= 0 {
		errs = append(errs, fmt.Errorf("SHUTDOWN_TIMEOUT: must be positive, got %s", c.ShutdownTimeout))
	}
	if c.IdempotencyTTL < time.Minute {
		errs = append(errs, fmt.Errorf("IDEMPOTENCY_KEY_TTL: must be at least 1m, got %s", c.IdempotencyTTL))
	}
	errs = append(errs, c.validateWebhooks()...)
	if c.RedisURL != "" {
		if _, err := redis.ParseURL(c.RedisURL); err != nil {
			errs = append(errs, fmt.Errorf("REDIS_URL: %w", err))
		}
	}
	if c.APIKeyCacheTTL < 0 || c.APIKeyCacheTTL > 5*time.Minute {
		errs = append(errs, fmt.Errorf("API_KEY_CACHE_TTL: must be between 0 (no cache) and 5m, got %s", c.APIKeyCacheTTL))
	}
	if c.APIKeyCacheSize < 1 {
		errs = append(errs, fmt.Errorf("API_KEY_CACHE_SIZE: must be at least 1, got %d", c.APIKeyCacheSize))
	}
	if c.PprofAddr != "" {
		if _, _, err := net.SplitHostPort(c.PprofAddr); err != nil {
			errs = append(errs, fmt.Errorf("PPROF_ADDR: %w", err))
		}
	}
	if c.MetricsAddr != "" {
		if _, _, err := net.SplitHostPort(c.MetricsAddr); err != nil {
			errs = append(errs, fmt.Errorf("METRICS_ADDR: %w", err))
		}
	}
	errs = append(errs, c.validateJobs()...)
	if _, ok := logLevels[c.LogLevel]; !ok {
		errs = append(errs, fmt.Errorf("LOG_LEVEL: %q is not one of debug, info, warn, error", c.LogLevel))
	}
	if err := validateOrigins(c.CORSOrigins); err != nil {
		errs = append(errs, fmt.Errorf("CORS_ALLOWED_ORIGINS: %w", err))
	}
	return errors.Join(append(errs, c.validateLimits()...)...)
}

// validateDatabase checks the URLs, and that a pooled DATABASE_URL keeps nothing on a server
// connection from one round trip to the next (see pooledExecModeProblem).
func (c config) validateDatabase() []error {
	var errs []error
	pooled, err := pgxpool.ParseConfig(c.DatabaseURL)
	if err != nil {
		errs = append(errs, fmt.Errorf("DATABASE_URL: %w", err))
	}
	if !c.pooled() {
		if c.DatabasePoolerPreparedStatements {
			errs = append(errs, errors.New("DATABASE_POOLER_PREPARED_STATEMENTS: set, but DATABASE_URL goes through no pooler (DATABASE_DIRECT_URL is not set)"))
		}
		return errs
	}
	if _, err := pgxpool.ParseConfig(c.DatabaseDirectURL); err != nil {
		errs = append(errs, fmt.Errorf("DATABASE_DIRECT_URL: %w", err))
	}
	if pooled == nil {
		return errs
	}
	if problem := pooledExecModeProblem(pooled.ConnConfig.DefaultQueryExecMode, c.DatabasePoolerPreparedStatements); problem != "" {
		errs = append(errs, fmt.Errorf("DATABASE_URL: goes through a pooler (DATABASE_DIRECT_URL is set), where %s", problem))
	}
	return errs
}

// pooledExecModeProblem says why pgx's query exec mode breaks behind a transaction pooler,
// which lends each transaction, and each statement outside one, whichever server connection
// is free; "" when it does not. cache_describe sends every query as an unnamed statement with
// the parameter types it learned once per connection; exec and simple_protocol type each
// parameter by its Go value (internal/db reads jsonb as json.RawMessage, never as []byte,
// which they would send as bytea). None of the three leaves a statement on a connection.
// cache_statement, pgx's default, leaves one named statement per query, which only a pooler
// that keeps prepared statements (keepsPrepared) can follow from one server connection to
// the next.
func pooledExecModeProblem(mode pgx.QueryExecMode, keepsPrepared bool) string {
	const fix = "set default_query_exec_mode to cache_describe, exec or simple_protocol"
	switch {
	case mode == pgx.QueryExecModeCacheStatement && !keepsPrepared:
		return "default_query_exec_mode=cache_statement, pgx's default, would prepare each statement by name " +
			"on one server connection and run it on another, where the name is unknown or taken: " + fix +
			", or DATABASE_POOLER_PREPARED_STATEMENTS=true if the pooler keeps prepared statements"
	case mode == pgx.QueryExecModeDescribeExec:
		// Its statement is unnamed, which no pooler keeps.
		return "default_query_exec_mode=describe_exec would describe each statement in one round trip and run it in " +
			"a second, which may reach another server connection: " + fix
	}
	return ""
}

// validateLimits checks the limits, and the timeouts against each other: a charge must fit
// in a request, a request's answer in the write timeout, and its headers in its whole read.
func (c config) validateLimits() []error {
	var errs []error
	if c.RequestTimeout <= 0 {
		errs = append(errs, fmt.Errorf("REQUEST_TIMEOUT: must be positive, got %s", c.RequestTimeout))
	}
	if c.ProcessorLatency < 0 || c.ProcessorLatency >= c.RequestTimeout {
		errs = append(errs, fmt.Errorf("PROCESSOR_LATENCY: must be at least 0 and below REQUEST_TIMEOUT (%s), got %s", c.RequestTimeout, c.ProcessorLatency))
	}
	if c.ReadHeaderTimeout <= 0 {
		errs = append(errs, fmt.Errorf("READ_HEADER_TIMEOUT: must be positive, got %s", c.ReadHeaderTimeout))
	}
	if c.ReadTimeout < c.ReadHeaderTimeout {
		errs = append(errs, fmt.Errorf("READ_TIMEOUT: must be at least READ_HEADER_TIMEOUT (%s), got %s", c.ReadHeaderTimeout, c.ReadTimeout))
	}
	if c.WriteTimeout <= c.RequestTimeout {
		errs = append(errs, fmt.Errorf("WRITE_TIMEOUT: must be longer than REQUEST_TIMEOUT (%s), or answers at the deadline are cut off; got %s", c.RequestTimeout, c.WriteTimeout))
	}
	if c.IdleTimeout <= 0 {
		errs = append(errs, fmt.Errorf("IDLE_TIMEOUT: must be positive, got %s", c.IdleTimeout))
	}
	if c.MaxHeaderBytes < 4<<10 || c.MaxHeaderBytes > 1<<20 {
		errs = append(errs, fmt.Errorf("MAX_HEADER_BYTES: must be between 4096 and 1048576, got %d", c.MaxHeaderBytes))
	}
	if c.MaxConnections < 1 {
		errs = append(errs, fmt.Errorf("MAX_CONNECTIONS: must be at least 1, got %d", c.MaxConnections))
	} else if c.MaxConnectionsPerIP < 1 || c.MaxConnectionsPerIP > c.MaxConnections {
		errs = append(errs, fmt.Errorf("MAX_CONNECTIONS_PER_IP: must be between 1 and MAX_CONNECTIONS (%d), got %d", c.MaxConnections, c.MaxConnectionsPerIP))
	}
	return errs
}

// validateOrigins accepts "*" alone, or origins as a browser sends them in Origin
// (https://app.example.com, http://localhost:3000), where the host may start with "*." for
// any subdomain. A path, even a trailing slash, would never match an Origin header.
func validateOrigins(origins []string) error {
	if slices.Contains(origins, "*") {
		if len(origins) > 1 {
			return errors.New(`"*" allows every origin and cannot be combined with others`)
		}
		return nil
	}
	for _, o := range origins {
		u, err := url.Parse(o)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" ||
			u.User != nil || u.RawPath != "" || u.Path != "" || u.RawQuery != "" || u.Fragment != "" ||
			strings.Contains(strings.TrimPrefix(u.Host, "*."), "*") {
			return fmt.Errorf("%q is not an origin like https://app.example.com (scheme and host, optional port, no path)", o)
		}
	}
	return nil
}

func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] > '~' {
			return false
		}
	}
	return true
}

// maxRetries bounds WEBHOOK_RETRY_SCHEDULE: the default has 9 retries over about three days.
const maxRetries = 20

func (c config) validateWebhooks() []error {
	var errs []error
	if c.WebhookTimeout < 100*time.Millisecond || c.WebhookTimeout > time.Minute {
		errs = append(errs, fmt.Errorf("WEBHOOK_TIMEOUT: must be between 100ms and 1m, got %s", c.WebhookTimeout))
	}
	if c.WebhookWorkers < webhooks.MaxInFlightPerEndpoint || c.WebhookWorkers > 1000 {
		// Fewer workers than one endpoint may hold would let a single hung endpoint stop them all.
		errs = append(errs, fmt.Errorf("WEBHOOK_WORKERS: must be between %d and 1000, got %d", webhooks.MaxInFlightPerEndpoint, c.WebhookWorkers))
	}
	if attempt := c.WebhookTimeout + webhooks.AttemptOverhead; c.JobRescueAfter <= attempt {
		// A live attempt must time out before its job is presumed dead and run again.
		errs = append(errs, fmt.Errorf("JOB_RESCUE_AFTER: must exceed WEBHOOK_TIMEOUT plus %s (%s), got %s", webhooks.AttemptOverhead, attempt, c.JobRescueAfter))
	}
	if len(c.WebhookRetrySchedule) > maxRetries {
		errs = append(errs, fmt.Errorf("WEBHOOK_RETRY_SCHEDULE: at most %d retries, got %d", maxRetries, len(c.WebhookRetrySchedule)))
	}
	var retries time.Duration
	for _, d := range c.WebhookRetrySchedule {
		if d <= 0 || d > 7*24*time.Hour {
			errs = append(errs, fmt.Errorf("WEBHOOK_RETRY_SCHEDULE: each delay must be between 0 and 168h, got %s", d))
		}
		retries += d
	}
	if floor := max(time.Minute, retries); c.EventRetention <= floor {
		// An event is kept while a delivery of it is pending; one shorter than the retries
		// would keep most events past it, which is not what it says.
		errs = append(errs, fmt.Errorf("EVENT_RETENTION: must exceed 1m and WEBHOOK_RETRY_SCHEDULE's total (%s), got %s", retries, c.EventRetention))
	}
	return errs
}

func (c config) validateJobs() []error {
	var errs []error
	switch c.ProcessRole {
	case roleAll, roleAPI, roleWorker:
	default:
		errs = append(errs, fmt.Errorf("PROCESS_ROLE: %q is not one of all, api, worker", c.ProcessRole))
	}
	if c.JobWorkers < 1 || c.JobWorkers > 1000 {
		errs = append(errs, fmt.Errorf("JOB_WORKERS: must be between 1 and 1000, got %d", c.JobWorkers))
	}
	if c.JobTimeout <= 0 {
		errs = append(errs, fmt.Errorf("JOB_TIMEOUT: must be positive, got %s", c.JobTimeout))
	}
	if c.JobRescueAfter <= c.JobTimeout {
		// A job is presumed dead only after it could have timed out: a live one is never run twice.
		errs = append(errs, fmt.Errorf("JOB_RESCUE_AFTER: must exceed JOB_TIMEOUT (%s), got %s", c.JobTimeout, c.JobRescueAfter))
	}
	if c.ReportRetention < time.Minute {
		errs = append(errs, fmt.Errorf("REPORT_RETENTION: must be at least 1m, got %s", c.ReportRetention))
	}
	return errs
}
