package telemetry

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// Config is OpenTelemetry's standard environment variables for traces, read with the rest of
// the server's configuration (rather than by the exporter from the process's environment), so
// a test can start a server with its own.
type Config struct {
	// Endpoint is the collector's base URL; traces go to its /v1/traces.
	Endpoint string `env:"OTEL_EXPORTER_OTLP_ENDPOINT"`
	// TracesEndpoint is the full URL traces go to; it wins over Endpoint.
	TracesEndpoint string `env:"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"`
	ServiceName    string `env:"OTEL_SERVICE_NAME" envDefault:"payments-api"`
	// BatchDelayMillis is the longest a finished span waits before it is exported.
	BatchDelayMillis int `env:"OTEL_BSP_SCHEDULE_DELAY" envDefault:"5000"`
}

// Enabled reports whether a collector is configured.
func (c Config) Enabled() bool { return c.Endpoint != "" || c.TracesEndpoint != "" }

// Setup returns the TracerProvider spans are recorded with, and the function that flushes
// and stops it (call it on exit, after the server has drained). When no collector is
// configured the provider is nil, meaning "trace nothing", and shutdown does nothing.
func Setup(ctx context.Context, c Config) (provider trace.TracerProvider, shutdown func(context.Context) error, err error) {
	if !c.Enabled() {
		return nil, func(context.Context) error { return nil }, nil
	}
	endpoint, err := c.tracesURL()
	if err != nil {
		return nil, nil, err
	}
	exporter, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(endpoint))
	if err != nil {
		return nil, nil, fmt.Errorf("create OTLP trace exporter: %w", err)
	}
	res, err := resource.New(ctx, resource.WithTelemetrySDK(),
		resource.WithAttributes(semconv.ServiceName(c.ServiceName)))
	if err != nil {
		return nil, nil, fmt.Errorf("describe the service for traces: %w", err)
	}
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithResource(res),
		sdktrace.WithBatcher(exporter, sdktrace.WithBatchTimeout(time.Duration(c.BatchDelayMillis)*time.Millisecond)),
	)
	return tp, tp.Shutdown, nil
}

// tracesURL is where traces are posted: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as it is, or
// OTEL_EXPORTER_OTLP_ENDPOINT with the signal's path, as the OTLP exporter specification says.
func (c Config) tracesURL() (string, error) {
	raw, name := c.TracesEndpoint, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	if raw == "" {
		raw, name = strings.TrimSuffix(c.Endpoint, "/")+"/v1/traces", "OTEL_EXPORTER_OTLP_ENDPOINT"
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("%s: want an http or https URL, got %q", name, raw)
	}
	return raw, nil
}
