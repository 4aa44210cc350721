// Package metrics defines every Prometheus series the server exports, on one registry that
// internal/app creates and passes in: no global registry, so tests can run servers side by side.
// Other packages record through the methods of Metrics and never import Prometheus. Methods
// on a nil *Metrics record nothing, so code under test may leave metrics out.
//
// It imports the Prometheus client, pgxpool (for the pool collector) and net/http (for the
// names of its methods) only.
package metrics

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/common/expfmt"
)

// latencyBuckets span a cached read (under a millisecond) to a request near its deadline.
var latencyBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

// Metrics holds the server's series. Label values are always from small fixed sets (route
// templates, statuses, outcomes), never ids, keys or anything else a client chooses, so the
// number of series stays bounded whatever clients send.
type Metrics struct {
	registry *prometheus.Registry

	requestDuration *prometheus.HistogramVec // method, route, status
	// requestSeries holds the Observer of each requestDuration series once used: every
	// request records one, and WithLabelValues hashes and checks its three labels each time.
	requestSeries sync.Map               // requestLabels → prometheus.Observer
	idempotency   *prometheus.CounterVec // operation, outcome

	jobsQueued         *prometheus.GaugeVec     // queue, state
	jobsBehind         *prometheus.GaugeVec     // queue
	jobDuration        *prometheus.HistogramVec // kind, outcome
	webhookDeliveries  *prometheus.HistogramVec // outcome
	webhooksEnded      *prometheus.CounterVec   // outcome
	rateLimitRefusals  *prometheus.CounterVec   // policy
	rateLimitFallbacks prometheus.Counter

	countJobs func(context.Context) ([]QueueDepth, error) // see CountJobsOnScrape
}

// New registers the server's series, the Go runtime's and the process's (RSS, CPU, file
// descriptors) and, when pool is not nil, the database pool's.
func New(pool *pgxpool.Pool) *Metrics {
	m := &Metrics{
		registry: prometheus.NewRegistry(),
		requestDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "http_request_duration_seconds",
			Help:    "Time to answer an HTTP request, by method (OTHER if not a standard one), route template (unmatched if none) and status.",
			Buckets: latencyBuckets,
		}, []string{"method", "route", "status"}),
		idempotency: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "idempotency_requests_total",
			Help: "Requests with an Idempotency-Key, by operation and outcome (claimed, replayed, in_flight, mismatch).",
		}, []string{"operation", "outcome"}),
		jobsQueued: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "jobs_queued",
			Help: "Jobs waiting to run, by queue and state: available (due now), scheduled (for later) or retryable (waiting for a retry's time).",
		}, []string{"queue", "state"}),
		jobsBehind: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "jobs_oldest_available_age_seconds",
			Help: "How long the available job due longest has waited for a worker, by queue: how far the workers are behind.",
		}, []string{"queue"}),
		jobDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "job_run_duration_seconds",
			Help:    "Time a job ran, by kind and outcome.",
			Buckets: prometheus.ExponentialBuckets(0.01, 4, 9), // 10 ms to 11 min
		}, []string{"kind", "outcome"}),
		webhookDeliveries: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "webhook_delivery_duration_seconds",
			Help:    "Time of one webhook delivery attempt, by outcome; its count is the number of attempts.",
			Buckets: latencyBuckets,
		}, []string{"outcome"}),
		webhooksEnded: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "webhook_deliveries_ended_total",
			Help: "Webhook deliveries that ended with an attempt, by outcome: succeeded, failed (its retries used up, or refused) or endpoint_disabled (a 410, or failing for five days).",
		}, []string{"outcome"}),
		rateLimitRefusals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ratelimit_refusals_total",
			Help: "Requests refused with 429, by policy.",
		}, []string{"policy"}),
		rateLimitFallbacks: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ratelimit_fallbacks_total",
			Help: "Rate-limit decisions taken in memory because Redis did not answer.",
		}),
	}
	m.registry.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.requestDuration, m.idempotency,
		m.jobsQueued, m.jobsBehind, m.jobDuration, m.webhookDeliveries, m.webhooksEnded,
		m.rateLimitRefusals, m.rateLimitFallbacks,
	)
	if pool != nil {
		m.registry.MustRegister(newPoolCollector(pool))
	}
	return m
}

// ObserveRequest records one answered HTTP request. route is the template
// ("/payments/{id}"), never the path, so ids do not become series; the method is recorded
// as methodLabel names it. status needs no such care: the server chose it.
func (m *Metrics) ObserveRequest(method, route string, status int, d time.Duration) {
	if m == nil {
		return
	}
	labels := requestLabels{methodLabel(method), route, status}
	o, ok := m.requestSeries.Load(labels)
	if !ok {
		o, _ = m.requestSeries.LoadOrStore(labels, m.requestDuration.WithLabelValues(labels.method, route, strconv.Itoa(status)))
	}
	o.(prometheus.Observer).Observe(d.Seconds())
}

// requestLabels are the labels of one requestDuration series.
type requestLabels struct {
	method, route string
	status        int
}

// standardMethods are the methods of RFC 9110 and PATCH (RFC 5789): the ones net/http names.
var standardMethods = map[string]bool{
	http.MethodGet: true, http.MethodHead: true, http.MethodPost: true, http.MethodPut: true,
	http.MethodPatch: true, http.MethodDelete: true, http.MethodConnect: true,
	http.MethodOptions: true, http.MethodTrace: true,
}

// StandardMethod reports whether method is one of RFC 9110's or PATCH: a method any other
// signal (a span's name, say) may record as it is, where another would be the client's choice.
func StandardMethod(method string) bool { return standardMethods[method] }

// methodLabel is method if it is a standard one, and "OTHER" if not. A client may send any
// token as a method (each answered 404 or 405), and every new label value would add a
// histogram's series for as long as the process lives.
func methodLabel(method string) string {
	if StandardMethod(method) {
		return method
	}
	return "OTHER"
}

// IdempotencyOutcome counts how a request with an Idempotency-Key was answered
// (idempotency.Observer).
func (m *Metrics) IdempotencyOutcome(operation, outcome string) {
	if m == nil {
		return
	}
	m.idempotency.WithLabelValues(operation, outcome).Inc()
}

// QueueDepth is how many jobs of one queue wait in one state, and how long the one due
// longest has been due (OldestDue, read for the available ones).
type QueueDepth struct {
	Queue, State string
	Jobs         int
	OldestDue    time.Duration
}

// JobsQueued sets how many jobs wait in d's queue and state (CountJobsOnScrape keeps it
// current) and, for the available ones, how long the oldest has waited.
func (m *Metrics) JobsQueued(d QueueDepth) {
	if m == nil {
		return
	}
	m.jobsQueued.WithLabelValues(d.Queue, d.State).Set(float64(d.Jobs))
	if d.State == "available" {
		m.jobsBehind.WithLabelValues(d.Queue).Set(d.OldestDue.Seconds())
	}
}

// JobRan records one run of a job of kind: outcome is "succeeded", "failed", "canceled" or
// "snoozed" (jobs.Observer).
func (m *Metrics) JobRan(kind, outcome string, d time.Duration) {
	if m == nil {
		return
	}
	m.jobDuration.WithLabelValues(kind, outcome).Observe(d.Seconds())
}

// WebhookDelivered records one delivery attempt: outcome is "succeeded" (a 2xx), "failed"
// (another status), "error" (no answer: timeout, refused, blocked address) (webhooks.Observer).
func (m *Metrics) WebhookDelivered(outcome string, d time.Duration) {
	if m == nil {
		return
	}
	m.webhookDeliveries.WithLabelValues(outcome).Observe(d.Seconds())
}

// WebhookDeliveryEnded counts a delivery that an attempt ended: outcome is "succeeded",
// "failed" or "endpoint_disabled" (webhooks.Observer).
func (m *Metrics) WebhookDeliveryEnded(outcome string) {
	if m == nil {
		return
	}
	m.webhooksEnded.WithLabelValues(outcome).Inc()
}

// RateLimitRefused counts one request refused with 429 under policy ("default", "writes").
func (m *Metrics) RateLimitRefused(policy string) {
	if m == nil {
		return
	}
	m.rateLimitRefusals.WithLabelValues(policy).Inc()
}

// RateLimitFellBack counts one decision taken in memory because Redis failed.
func (m *Metrics) RateLimitFellBack() {
	if m == nil {
		return
	}
	m.rateLimitFallbacks.Inc()
}

// CountJobsOnScrape makes every scrape set jobs_queued and jobs_oldest_available_age_seconds
// from count, so the gauges are current in every process, not only in the one that runs the
// jobs. A failed count (the database is away) leaves the last values: the scrape still answers.
func (m *Metrics) CountJobsOnScrape(count func(context.Context) ([]QueueDepth, error)) {
	m.countJobs = count
}

// scrapeTimeout bounds the queries a scrape makes.
const scrapeTimeout = 2 * time.Second

// WriteText writes every series in the Prometheus text format 0.0.4 (what GET /metrics
// answers). Gathering reads the collectors at this moment: the pool's counters are current,
// and so is the queue depth when CountJobsOnScrape is set.
func (m *Metrics) WriteText(ctx context.Context, w io.Writer) error {
	if m.countJobs != nil {
		ctx, cancel := context.WithTimeout(ctx, scrapeTimeout)
		waiting, err := m.countJobs(ctx)
		cancel()
		if err == nil {
			// A queue that emptied reads 0 by being absent, not stale; a queue with no
			// available job is behind by nothing.
			m.jobsQueued.Reset()
			m.jobsBehind.Reset()
			for _, d := range waiting {
				m.JobsQueued(d)
			}
		}
	}
	families, err := m.registry.Gather()
	if err != nil {
		return fmt.Errorf("gather metrics: %w", err)
	}
	enc := expfmt.NewEncoder(w, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, f := range families {
		if err := enc.Encode(f); err != nil {
			return fmt.Errorf("encode metrics: %w", err)
		}
	}
	return nil
}
