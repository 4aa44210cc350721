// Package telemetry sets up OpenTelemetry tracing for a process that is told where a
// collector is: the OTLP/HTTP exporter, the batching TracerProvider and the resource naming
// the service. Without a collector it sets up nothing, and the server runs with no tracer at
// all.
//
// A trace crosses each hop as W3C Trace Context (the traceparent header), which the code at
// each hop applies itself with propagation.TraceContext: read from incoming requests
// (handlers), written into the metadata of the jobs a request enqueues (otelriver) and onto
// every webhook delivery (webhooks). No global propagator is installed either.
//
// The provider it returns is passed to whatever records spans (handlers, the database pool,
// the job client, the webhook sender), never installed as OpenTelemetry's global one: tests
// run many servers in one process, and a global provider would mix their spans.
//
// It imports the OpenTelemetry SDK and exporter, and nothing of this module: only cmd
// imports it.
package telemetry
