package telemetry

import (
	"context"
	"fmt"
	"net/url"
	"runtime/debug"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	oteltrace "go.opentelemetry.io/otel/trace"
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
	// ResourceAttributes describe the process further, as key=value pairs apart by commas,
	// each value percent-encoded (W3C Baggage's format): deployment.environment.name=staging.
	ResourceAttributes string `env:"OTEL_RESOURCE_ATTRIBUTES"`
	// BatchDelayMillis is the longest a finished span waits before it is exported.
	BatchDelayMillis int `env:"OTEL_BSP_SCHEDULE_DELAY" envDefault:"5000"`
}

// Enabled reports whether a collector is configured.
func (c Config) Enabled() bool { return c.Endpoint != "" || c.TracesEndpoint != "" }

// Setup returns the TracerProvider spans are recorded with, and the function that flushes
// and stops it (call it on exit, after the server has drained). When no collector is
// configured the provider is nil, meaning "trace nothing", and shutdown does nothing.
func Setup(ctx context.Context, c Config) (provider oteltrace.TracerProvider, shutdown func(context.Context) error, err error) {
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
	res, err := c.resource(ctx)
	if err != nil {
		return nil, nil, err
	}
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithResource(res),
		sdktrace.WithBatcher(exporter, sdktrace.WithBatchTimeout(time.Duration(c.BatchDelayMillis)*time.Millisecond)),
	)
	return tp, tp.Shutdown, nil
}

// resource describes the process every span comes from. Several processes run the same
// service (deploy/cluster runs five), so each names itself apart: service.instance.id, a
// random UUID for each start, with the host and the process id beside it; service.version is
// the commit it was built from, when the build recorded one. OTEL_RESOURCE_ATTRIBUTES adds
// the operator's own, and OTEL_SERVICE_NAME wins over a service.name among them.
func (c Config) resource(ctx context.Context) (*resource.Resource, error) {
	own, err := baggage.Parse(c.ResourceAttributes)
	if err != nil {
		return nil, fmt.Errorf("OTEL_RESOURCE_ATTRIBUTES: want key=value pairs apart by commas, values percent-encoded: %w", err)
	}
	attrs := make([]attribute.KeyValue, 0, own.Len()+2)
	for _, m := range own.Members() {
		attrs = append(attrs, attribute.String(m.Key(), m.Value()))
	}
	attrs = append(attrs, semconv.ServiceName(c.ServiceName))
	if v := buildVersion(debug.ReadBuildInfo()); v != "" {
		attrs = append(attrs, semconv.ServiceVersion(v))
	}
	res, err := resource.New(ctx, resource.WithTelemetrySDK(), resource.WithService(), resource.WithHost(),
		resource.WithProcessPID(), resource.WithAttributes(attrs...))
	if err != nil {
		return nil, fmt.Errorf("describe the service for traces: %w", err)
	}
	return res, nil
}

// buildVersion is the commit the binary was built from, as its build info holds it
// (debug.ReadBuildInfo: go build records it when it builds in a git checkout, unless
// -buildvcs=false), "-dirty" when the checkout had changes, or the module's version for a
// go install of a tagged version; "" when the build recorded neither.
func buildVersion(info *debug.BuildInfo, ok bool) string {
	if !ok {
		return ""
	}
	var revision, modified string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			revision = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	switch {
	case revision != "" && modified == "true":
		return revision + "-dirty"
	case revision != "":
		return revision
	case info.Main.Version != "(devel)":
		return info.Main.Version // "" in a test binary
	}
	return ""
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
