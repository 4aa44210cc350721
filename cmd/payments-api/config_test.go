package main

import (
	"net/netip"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/payments-api/payments-api/internal/accounts"
	"github.com/payments-api/payments-api/internal/events"
	"github.com/payments-api/payments-api/internal/handlers"
	"github.com/payments-api/payments-api/internal/idempotency"
	"github.com/payments-api/payments-api/internal/processor"
	"github.com/payments-api/payments-api/internal/reports"
	"github.com/payments-api/payments-api/internal/webhooks"
)

func TestConfigDefaultsWork(t *testing.T) {
	cfg, err := loadConfig(map[string]string{})
	if err != nil {
		t.Fatalf("defaults: %v", err)
	}
	if cfg.ListenAddr != ":8080" || len(cfg.DemoAPIKeys) != 1 || cfg.ShutdownTimeout != 30*time.Second {
		t.Errorf("defaults: %+v", cfg)
	}
	if cfg.ProcessRole != roleAll || cfg.JobWorkers != 4 || cfg.JobTimeout != time.Minute ||
		cfg.JobRescueAfter != 2*time.Minute || cfg.ReportRetention != 7*24*time.Hour || cfg.EventRetention != 30*24*time.Hour {
		t.Errorf("job defaults: %+v", cfg)
	}
	if !strings.Contains(cfg.DatabaseURL, "localhost:5432") {
		t.Errorf("default DATABASE_URL %q", cfg.DatabaseURL)
	}
}

func TestConfigErrorsNameTheVariable(t *testing.T) {
	tests := []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"DATABASE_URL": "postgres://%zz"}, "DATABASE_URL"},
		{map[string]string{"DATABASE_DIRECT_URL": "postgres://%zz"}, "DATABASE_DIRECT_URL"},
		// Behind a pooler, pgx's default prepared statements would break, and so would
		// describe_exec's two round trips.
		{map[string]string{"DATABASE_DIRECT_URL": "postgres://localhost/payments"}, "DATABASE_URL: goes through a pooler"},
		{map[string]string{"DATABASE_DIRECT_URL": "postgres://localhost/payments",
			"DATABASE_URL": "postgres://localhost:6432/payments?default_query_exec_mode=cache_statement"}, "cache_statement, pgx's default"},
		{map[string]string{"DATABASE_DIRECT_URL": "postgres://localhost/payments",
			"DATABASE_URL": "postgres://localhost:6432/payments?default_query_exec_mode=describe_exec"}, "describe_exec would describe"},
		{map[string]string{"DATABASE_DIRECT_URL": "postgres://localhost/payments",
			"DATABASE_URL": "postgres://localhost:6432/payments?default_query_exec_mode=prepare"}, "DATABASE_URL"},
		// A pooler that keeps named statements still loses describe_exec's unnamed one, and
		// keeps nothing when there is no pooler.
		{map[string]string{"DATABASE_DIRECT_URL": "postgres://localhost/payments", "DATABASE_POOLER_PREPARED_STATEMENTS": "true",
			"DATABASE_URL": "postgres://localhost:6432/payments?default_query_exec_mode=describe_exec"}, "describe_exec would describe"},
		{map[string]string{"DATABASE_POOLER_PREPARED_STATEMENTS": "true"}, "DATABASE_POOLER_PREPARED_STATEMENTS: set, but"},
		{map[string]string{"DATABASE_POOLER_PREPARED_STATEMENTS": "yes"}, "DATABASE_POOLER_PREPARED_STATEMENTS"},
		{map[string]string{"LISTEN_ADDR": "8080"}, "LISTEN_ADDR"},
		{map[string]string{"DEMO_API_KEYS": "sk_test_ok_key,short"}, "DEMO_API_KEYS"},
		{map[string]string{"DEMO_API_KEYS": "has a space in it"}, "DEMO_API_KEYS"},
		{map[string]string{"SHUTDOWN_TIMEOUT": "soon"}, "SHUTDOWN_TIMEOUT"},
		{map[string]string{"SHUTDOWN_TIMEOUT": "-1s"}, "SHUTDOWN_TIMEOUT"},
		{map[string]string{"LOG_LEVEL": "loud"}, "LOG_LEVEL"},
		{map[string]string{"PROCESSOR_LATENCY": "-5ms"}, "PROCESSOR_LATENCY"},
		{map[string]string{"IDEMPOTENCY_KEY_TTL": "1s"}, "IDEMPOTENCY_KEY_TTL"},
		{map[string]string{"PROCESS_ROLE": "both"}, "PROCESS_ROLE"},
		{map[string]string{"JOB_WORKERS": "0"}, "JOB_WORKERS"},
		{map[string]string{"JOB_TIMEOUT": "0s"}, "JOB_TIMEOUT"},
		{map[string]string{"JOB_TIMEOUT": "5m"}, "JOB_RESCUE_AFTER"}, // the default 2m no longer exceeds it
		{map[string]string{"JOB_RESCUE_AFTER": "1m"}, "JOB_RESCUE_AFTER"},
		{map[string]string{"REPORT_RETENTION": "1s"}, "REPORT_RETENTION"},
		{map[string]string{"EVENT_RETENTION": "1s", "WEBHOOK_RETRY_SCHEDULE": "1s"}, "EVENT_RETENTION"},
		{map[string]string{"EVENT_RETENTION": "72h"}, "EVENT_RETENTION"}, // the default schedule retries for about 80h
		{map[string]string{"WEBHOOK_TIMEOUT": "0s"}, "WEBHOOK_TIMEOUT"},
		{map[string]string{"WEBHOOK_TIMEOUT": "1m", "JOB_RESCUE_AFTER": "62s"}, "JOB_RESCUE_AFTER"}, // a live attempt would be rescued
		{map[string]string{"WEBHOOK_WORKERS": "1"}, "WEBHOOK_WORKERS"},                              // one hung endpoint would hold them all
		{map[string]string{"OTEL_BSP_SCHEDULE_DELAY": "soon"}, "OTEL_BSP_SCHEDULE_DELAY"},           // a variable of Telemetry's, named
		{map[string]string{"OTEL_BSP_SCHEDULE_DELAY": "0"}, "OTEL_BSP_SCHEDULE_DELAY"},              // the exporter would spin a core
		{map[string]string{"OTEL_BSP_SCHEDULE_DELAY": "-5"}, "OTEL_BSP_SCHEDULE_DELAY"},
		{map[string]string{"WEBHOOK_RETRY_SCHEDULE": "1s,soon"}, "WEBHOOK_RETRY_SCHEDULE"},
		{map[string]string{"WEBHOOK_RETRY_SCHEDULE": "1s,-1s"}, "WEBHOOK_RETRY_SCHEDULE"},
		{map[string]string{"WEBHOOK_ALLOW_PRIVATE_NETWORKS": "maybe"}, "WEBHOOK_ALLOW_PRIVATE_NETWORKS"},
		{map[string]string{"CORS_ALLOWED_ORIGINS": "*,https://app.example.com"}, "CORS_ALLOWED_ORIGINS"},
		{map[string]string{"CORS_ALLOWED_ORIGINS": "https://app.example.com/"}, "CORS_ALLOWED_ORIGINS"},
		{map[string]string{"CORS_ALLOWED_ORIGINS": "app.example.com"}, "CORS_ALLOWED_ORIGINS"},
		{map[string]string{"CORS_ALLOWED_ORIGINS": "ftp://files.example.com"}, "CORS_ALLOWED_ORIGINS"},
		{map[string]string{"CORS_ALLOWED_ORIGINS": "https://app.*.example.com"}, "CORS_ALLOWED_ORIGINS"},
		{map[string]string{"TRUSTED_PROXIES": "haproxy"}, "TRUSTED_PROXIES"},
		{map[string]string{"TRUSTED_PROXIES": "10.0.0.0/33"}, "TRUSTED_PROXIES"},
		{map[string]string{"TRUSTED_PROXIES": "127.0.0.1,0.0.0.0/0"}, "TRUSTED_PROXIES"}, // anyone could name themselves
		{map[string]string{"TRUSTED_PROXIES": "::/0"}, "TRUSTED_PROXIES"},
		{map[string]string{"DATABASE_CONNECT_TIMEOUT": "0s"}, "DATABASE_CONNECT_TIMEOUT"},
		{map[string]string{"DATABASE_FAILOVER_WAIT": "-1s"}, "DATABASE_FAILOVER_WAIT"},
		{map[string]string{"REQUEST_TIMEOUT": "0s"}, "REQUEST_TIMEOUT"},
		{map[string]string{"PROCESSOR_LATENCY": "30s"}, "PROCESSOR_LATENCY"}, // not below REQUEST_TIMEOUT
		{map[string]string{"REQUEST_TIMEOUT": "40s"}, "WRITE_TIMEOUT"},       // the default 35s no longer covers it
		{map[string]string{"WRITE_TIMEOUT": "30s"}, "WRITE_TIMEOUT"},
		{map[string]string{"READ_HEADER_TIMEOUT": "0s"}, "READ_HEADER_TIMEOUT"},
		{map[string]string{"READ_TIMEOUT": "1s"}, "READ_TIMEOUT"}, // below READ_HEADER_TIMEOUT
		{map[string]string{"IDLE_TIMEOUT": "0s"}, "IDLE_TIMEOUT"},
		{map[string]string{"MAX_HEADER_BYTES": "100"}, "MAX_HEADER_BYTES"},
		{map[string]string{"MAX_HEADER_BYTES": "lots"}, "MAX_HEADER_BYTES"},
		{map[string]string{"MAX_CONNECTIONS": "0"}, "MAX_CONNECTIONS"},
		{map[string]string{"MAX_CONNECTIONS_PER_IP": "0"}, "MAX_CONNECTIONS_PER_IP"},
		{map[string]string{"MAX_CONNECTIONS_PER_IP": "1001"}, "MAX_CONNECTIONS_PER_IP: must be between 1 and MAX_CONNECTIONS (1000)"},
		{map[string]string{"MAX_CONNECTIONS": "50", "MAX_CONNECTIONS_PER_IP": "100"}, "MAX_CONNECTIONS_PER_IP"}, // set, so not lowered
		{map[string]string{"RATE_LIMIT_DEFAULT": "100"}, "RATE_LIMIT_DEFAULT"},
		{map[string]string{"RATE_LIMIT_WRITES": "25/500ms"}, "RATE_LIMIT_WRITES"},
		{map[string]string{"RATE_LIMIT_UNAUTHENTICATED": "0/1s"}, "RATE_LIMIT_UNAUTHENTICATED"},
		{map[string]string{"RATE_LIMIT_DISABLED": "maybe"}, "RATE_LIMIT_DISABLED"},
		{map[string]string{"REDIS_URL": "http://127.0.0.1:6379"}, "REDIS_URL"},
		{map[string]string{"API_KEY_CACHE_TTL": "-1s"}, "API_KEY_CACHE_TTL"},
		{map[string]string{"API_KEY_CACHE_TTL": "1h"}, "API_KEY_CACHE_TTL"},
		{map[string]string{"API_KEY_CACHE_SIZE": "0"}, "API_KEY_CACHE_SIZE"},
		{map[string]string{"PPROF_ADDR": "6060"}, "PPROF_ADDR"},
		// Set but empty, a variable with a default is refused rather than defaulted: a
		// manifest's ${...} that came out empty would run on a default nobody chose.
		{map[string]string{"LISTEN_ADDR": ""}, "LISTEN_ADDR: set but empty"},
		{map[string]string{"DATABASE_URL": ""}, "DATABASE_URL: set but empty"},
		{map[string]string{"CORS_ALLOWED_ORIGINS": ""}, "CORS_ALLOWED_ORIGINS: set but empty"},
		{map[string]string{"SHUTDOWN_TIMEOUT": ""}, "SHUTDOWN_TIMEOUT: set but empty"},
		{map[string]string{"OTEL_SERVICE_NAME": ""}, "OTEL_SERVICE_NAME: set but empty"},
		// Their defaults depend on RUN_MODE; empty is no choice of false or "none" either.
		{map[string]string{"FAULT_INJECTION": ""}, "FAULT_INJECTION: set but empty"},
		{map[string]string{"OPEN_TEST_ACCOUNTS": ""}, "OPEN_TEST_ACCOUNTS: set but empty"},
		{map[string]string{"RUN_MODE": "production", "METRICS_ADDR": ""}, "METRICS_ADDR: set but empty"},
	}
	for _, tt := range tests {
		_, err := loadConfig(tt.env)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v: error %v, want one naming %s", tt.env, err, tt.want)
		}
	}
}

// TestConfigAcceptsPooledExecModes: behind a pooler, every mode that leaves no statement on
// a server connection will do (internal/testing/integration runs the server in each).
func TestConfigAcceptsPooledExecModes(t *testing.T) {
	for _, mode := range []string{"cache_describe", "exec", "simple_protocol"} {
		_, err := loadConfig(map[string]string{
			"DATABASE_URL":        "postgres://localhost:6432/payments?default_query_exec_mode=" + mode,
			"DATABASE_DIRECT_URL": "postgres://localhost:5432/payments",
		})
		if err != nil {
			t.Errorf("default_query_exec_mode=%s behind a pooler: %v", mode, err)
		}
	}
}

// TestConfigAcceptsPreparedStatementsThroughAPoolerThatKeepsThem: with
// DATABASE_POOLER_PREPARED_STATEMENTS, pgx's default mode goes through the pooler, whether
// DATABASE_URL names it or not; the modes that leave nothing on a connection still do.
func TestConfigAcceptsPreparedStatementsThroughAPoolerThatKeepsThem(t *testing.T) {
	for _, query := range []string{"", "?default_query_exec_mode=cache_statement", "?default_query_exec_mode=simple_protocol"} {
		_, err := loadConfig(map[string]string{
			"DATABASE_URL":                        "postgres://localhost:6432/payments" + query,
			"DATABASE_DIRECT_URL":                 "postgres://localhost:5432/payments",
			"DATABASE_POOLER_PREPARED_STATEMENTS": "true",
		})
		if err != nil {
			t.Errorf("DATABASE_URL %q through a pooler that keeps prepared statements: %v", query, err)
		}
	}
}

// TestConfigConnectionsPerIP: MAX_CONNECTIONS_PER_IP defaults to 100, and its default follows
// a lower MAX_CONNECTIONS rather than refusing to start.
func TestConfigConnectionsPerIP(t *testing.T) {
	for _, tt := range []struct {
		env  map[string]string
		want int
	}{
		{map[string]string{}, 100},
		{map[string]string{"MAX_CONNECTIONS": "3"}, 3},
		{map[string]string{"MAX_CONNECTIONS_PER_IP": "1000"}, 1000},
		{map[string]string{"MAX_CONNECTIONS": "50", "MAX_CONNECTIONS_PER_IP": "1"}, 1},
	} {
		cfg, err := loadConfig(tt.env)
		if err != nil || cfg.MaxConnectionsPerIP != tt.want {
			t.Errorf("%v: MAX_CONNECTIONS_PER_IP %d (%v), want %d", tt.env, cfg.MaxConnectionsPerIP, err, tt.want)
		}
	}
}

func TestConfigAcceptsOrigins(t *testing.T) {
	for _, origins := range []string{"*", "https://app.example.com", "http://localhost:3000,https://*.example.com"} {
		cfg, err := loadConfig(map[string]string{"CORS_ALLOWED_ORIGINS": origins})
		if err != nil {
			t.Errorf("CORS_ALLOWED_ORIGINS=%s: %v", origins, err)
		}
		if got := strings.Join(cfg.CORSOrigins, ","); got != origins {
			t.Errorf("CORS_ALLOWED_ORIGINS=%s parsed as %q", origins, got)
		}
	}
	if cfg, _ := loadConfig(map[string]string{}); len(cfg.CORSOrigins) != 1 || cfg.CORSOrigins[0] != "*" {
		t.Errorf("default CORS_ALLOWED_ORIGINS %q, want [*]", cfg.CORSOrigins)
	}
}

func TestConfigParsesRateLimits(t *testing.T) {
	cfg, err := loadConfig(map[string]string{})
	if err != nil {
		t.Fatal(err)
	}
	if got := []string{cfg.RateLimitDefault.String(), cfg.RateLimitWrites.String()}; got[0] != "100/1s" || got[1] != "25/1s" {
		t.Errorf("default rates %v, want 100/1s and 25/1s", got)
	}
	if cfg.RateLimitDisabled || cfg.RedisURL != "" {
		t.Errorf("limits are off or shared by default: %+v", cfg)
	}
	cfg, err = loadConfig(map[string]string{"RATE_LIMIT_WRITES": "20/1m", "REDIS_URL": "redis://127.0.0.1:6379/0"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.RateLimitWrites.Quota != 20 || cfg.RateLimitWrites.Window != time.Minute {
		t.Errorf("RATE_LIMIT_WRITES=20/1m parsed as %+v", cfg.RateLimitWrites)
	}
}

func TestConfigParsesLists(t *testing.T) {
	cfg, err := loadConfig(map[string]string{"DEMO_API_KEYS": "sk_test_aaaaaaaa,sk_test_bbbbbbbb"})
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.DemoAPIKeys) != 2 || cfg.DemoAPIKeys[1] != "sk_test_bbbbbbbb" {
		t.Errorf("DEMO_API_KEYS parsed as %q", cfg.DemoAPIKeys)
	}
}

// TestConfigParsesTrustedProxies: addresses and networks, as the prefixes the server
// matches a connection's address against; none by default.
func TestConfigParsesTrustedProxies(t *testing.T) {
	cfg, err := loadConfig(map[string]string{"TRUSTED_PROXIES": "127.0.0.1, 10.1.2.3/8,::1,::ffff:192.0.2.7"})
	if err != nil {
		t.Fatal(err)
	}
	want := []netip.Prefix{
		netip.MustParsePrefix("127.0.0.1/32"), netip.MustParsePrefix("10.0.0.0/8"),
		netip.MustParsePrefix("::1/128"), netip.MustParsePrefix("192.0.2.7/32"),
	}
	if got := cfg.trustedProxies(); !slices.Equal(got, want) {
		t.Errorf("TRUSTED_PROXIES parsed as %v, want %v", got, want)
	}
	if cfg, err := loadConfig(map[string]string{}); err != nil || len(cfg.trustedProxies()) != 0 {
		t.Errorf("default TRUSTED_PROXIES: %v (%v), want none", cfg.trustedProxies(), err)
	}
}

// TestTheProcessDefaultsAreThePackagesDefaults: a default is written twice, as the
// environment's (an envDefault tag, which the configuration table documents) and as the
// package's own constant, which tests build the application with (apptest.Config). The two
// must be one value, or the tests run a server the process is not.
func TestTheProcessDefaultsAreThePackagesDefaults(t *testing.T) {
	cfg, err := loadConfig(map[string]string{})
	if err != nil {
		t.Fatal(err)
	}
	app := cfg.appConfig()
	durations := []struct {
		name         string
		process, pkg time.Duration
	}{
		{"IDEMPOTENCY_KEY_TTL", app.IdempotencyTTL, idempotency.DefaultTTL},
		{"API_KEY_CACHE_TTL", app.APIKeyCacheTTL, accounts.DefaultCacheTTL},
		{"WEBHOOK_TIMEOUT", app.WebhookTimeout, webhooks.DefaultTimeout},
		{"REPORT_RETENTION", app.ReportRetention, reports.DefaultRetention},
		{"EVENT_RETENTION", app.EventRetention, events.DefaultRetention},
		{"REQUEST_TIMEOUT", app.RequestTimeout, handlers.DefaultRequestTimeout},
	}
	for _, d := range durations {
		if d.process != d.pkg {
			t.Errorf("%s defaults to %s in the process and %s in its package", d.name, d.process, d.pkg)
		}
	}
	if app.APIKeyCacheSize != accounts.DefaultCacheSize {
		t.Errorf("API_KEY_CACHE_SIZE defaults to %d in the process and %d in its package", app.APIKeyCacheSize, accounts.DefaultCacheSize)
	}
	if !slices.Equal(app.WebhookRetrySchedule, webhooks.DefaultSchedule) {
		t.Errorf("WEBHOOK_RETRY_SCHEDULE defaults to %v in the process and %v in its package", app.WebhookRetrySchedule, webhooks.DefaultSchedule)
	}
}

func TestConfigWebhookDefaultsAreStandardWebhooks(t *testing.T) {
	cfg, err := loadConfig(map[string]string{})
	if err != nil {
		t.Fatal(err)
	}
	want := []time.Duration{5 * time.Second, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour,
		5 * time.Hour, 10 * time.Hour, 14 * time.Hour, 20 * time.Hour, 24 * time.Hour}
	if !slices.Equal(cfg.WebhookRetrySchedule, want) || cfg.WebhookTimeout != 10*time.Second || cfg.WebhookAllowPrivateNetworks {
		t.Errorf("webhook defaults: schedule %v, timeout %s, private %v", cfg.WebhookRetrySchedule, cfg.WebhookTimeout, cfg.WebhookAllowPrivateNetworks)
	}
	cfg, err = loadConfig(map[string]string{"WEBHOOK_RETRY_SCHEDULE": "1s,1s,1s"})
	if err != nil || !slices.Equal(cfg.WebhookRetrySchedule, []time.Duration{time.Second, time.Second, time.Second}) {
		t.Errorf("WEBHOOK_RETRY_SCHEDULE=1s,1s,1s: %v, %v", cfg.WebhookRetrySchedule, err)
	}
}

// TestSlowCardFitsTheDefaultDeadline: with the defaults, pm_card_slow answers well within
// REQUEST_TIMEOUT (serve warns when a configuration makes it not fit).
func TestSlowCardFitsTheDefaultDeadline(t *testing.T) {
	cfg, err := loadConfig(map[string]string{})
	if err != nil {
		t.Fatal(err)
	}
	if slow := cfg.ProcessorLatency + processor.SlowCardDelay; slow >= cfg.RequestTimeout {
		t.Errorf("pm_card_slow takes %s, REQUEST_TIMEOUT is %s", slow, cfg.RequestTimeout)
	}
	if !cfg.FaultInjection || !cfg.OpenTestAccounts {
		t.Errorf("the sandbox is off by default: FAULT_INJECTION %v, OPEN_TEST_ACCOUNTS %v", cfg.FaultInjection, cfg.OpenTestAccounts)
	}
}

// TestRunModeDefaults: the sandbox opens its doors unless told not to; production opens none,
// refuses a setting that would open one, and serves metrics on a listener of its own.
func TestRunModeDefaults(t *testing.T) {
	sandbox, err := loadConfig(map[string]string{})
	if err != nil {
		t.Fatal(err)
	}
	if sandbox.RunMode != modeSandbox || !slices.Equal(sandbox.DemoAPIKeys, []string{publishedDemoKey}) ||
		!sandbox.FaultInjection || !sandbox.OpenTestAccounts || sandbox.MetricsAddr != "" {
		t.Errorf("sandbox defaults: mode %q, keys %q, faults %v, test accounts %v, metrics %q",
			sandbox.RunMode, sandbox.DemoAPIKeys, sandbox.FaultInjection, sandbox.OpenTestAccounts, sandbox.MetricsAddr)
	}
	noKeys, err := loadConfig(map[string]string{"DEMO_API_KEYS": ""})
	if err != nil || len(noKeys.DemoAPIKeys) != 0 {
		t.Errorf("DEMO_API_KEYS= in the sandbox: %q, %v; want no key", noKeys.DemoAPIKeys, err)
	}
	closed, err := loadConfig(map[string]string{"FAULT_INJECTION": "false", "OPEN_TEST_ACCOUNTS": "false"})
	if err != nil || closed.FaultInjection || closed.OpenTestAccounts {
		t.Errorf("sandbox with its switches off: faults %v, test accounts %v, %v", closed.FaultInjection, closed.OpenTestAccounts, err)
	}

	prod, err := loadConfig(map[string]string{"RUN_MODE": "production"})
	if err != nil {
		t.Fatal(err)
	}
	if len(prod.DemoAPIKeys) != 0 || prod.FaultInjection || prod.OpenTestAccounts || prod.MetricsAddr != defaultMetricsAddr {
		t.Errorf("production defaults: keys %q, faults %v, test accounts %v, metrics %q",
			prod.DemoAPIKeys, prod.FaultInjection, prod.OpenTestAccounts, prod.MetricsAddr)
	}
	for _, door := range []string{"FAULT_INJECTION", "OPEN_TEST_ACCOUNTS", "WEBHOOK_ALLOW_PRIVATE_NETWORKS"} {
		_, err := loadConfig(map[string]string{"RUN_MODE": "production", door: "true"})
		if err == nil || !strings.Contains(err.Error(), door) {
			t.Errorf("RUN_MODE=production with %s=true: %v, want an error naming it", door, err)
		}
	}
	// The README's key is a door too, among other keys or alone.
	for _, keys := range []string{publishedDemoKey, "sk_live_0123456789abcdef," + publishedDemoKey} {
		_, err := loadConfig(map[string]string{"RUN_MODE": "production", "DEMO_API_KEYS": keys})
		if err == nil || !strings.Contains(err.Error(), "DEMO_API_KEYS") {
			t.Errorf("RUN_MODE=production with DEMO_API_KEYS=%s: %v, want an error naming it", keys, err)
		}
	}
	// An empty RUN_MODE is refused, not taken for the default: a manifest whose ${MODE} came
	// out empty must not open the sandbox's doors.
	for _, bad := range []map[string]string{{"RUN_MODE": "staging"}, {"RUN_MODE": ""}, {"RUN_MODE": "production", "METRICS_ADDR": "9090"}} {
		if _, err := loadConfig(bad); err == nil || !strings.Contains(err.Error(), "RUN_MODE") && bad["METRICS_ADDR"] == "" {
			t.Errorf("%v: %v, want an error naming RUN_MODE", bad, err)
		}
	}
}

// TestGCPercent: the server's own default pace for the collector, unless GOGC names one
// (the runtime has then read it already).
func TestGCPercent(t *testing.T) {
	restore := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(restore) })
	for _, tt := range []struct {
		env  map[string]string
		want int
	}{
		{map[string]string{}, defaultGOGC},
		{map[string]string{"GOGC": "100"}, 100}, // left as the runtime set it (here, 100)
		{map[string]string{"GOGC": "off"}, 100},
	} {
		debug.SetGCPercent(100)
		setGCPercent(tt.env)
		if got := debug.SetGCPercent(100); got != tt.want {
			t.Errorf("GOGC %q: the collector's percent is %d, want %d", tt.env["GOGC"], got, tt.want)
		}
	}
}
