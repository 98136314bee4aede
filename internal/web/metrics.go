package web

import (
	"context"
	"errors"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"readpast/internal/queue"
	"readpast/internal/workers"
)

// Metrics is the node's Prometheus registry (private: nothing global). It is a
// workers.Observer, fed by the node's claim loops; Server adds the gauges it
// reads at scrape time. docs/API.md lists every metric.
type Metrics struct {
	reg             *prometheus.Registry
	claims          *prometheus.CounterVec
	claimedTasks    *prometheus.CounterVec
	claimErrors     *prometheus.CounterVec
	claimDuration   *prometheus.HistogramVec
	attempts        *prometheus.CounterVec
	attemptDuration *prometheus.HistogramVec
	finishDuration  prometheus.Histogram
	alertSends      alertSends // metrics_alerts.go
}

var _ workers.Observer = (*Metrics)(nil)

// NewMetrics makes the registry with the Go runtime and process collectors and
// the counters the workers feed.
func NewMetrics() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		claims: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "readpast_claims_total",
			Help: "Claim round trips made by this node's workers."}, []string{"queue"}),
		claimedTasks: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "readpast_claimed_tasks_total",
			Help: "Tasks claimed by this node's workers."}, []string{"queue"}),
		claimErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "readpast_claim_errors_total",
			Help: "Claim round trips that failed."}, []string{"queue"}),
		claimDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "readpast_claim_duration_seconds",
			Help:    "Latency of one claim round trip.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14)}, []string{"queue"}),
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "readpast_attempts_total",
			Help: "Finished attempts by outcome (succeeded, failed, timed_out, cancelled, lost)."}, []string{"queue", "outcome"}),
		attemptDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "readpast_attempt_duration_seconds",
			Help:    "How long attempts ran.",
			Buckets: prometheus.ExponentialBuckets(0.01, 4, 10)}, []string{"queue"}),
		finishDuration: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "readpast_finish_duration_seconds",
			Help:    "Latency of one write of ended attempts (a batch), retries included.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16)}),
	}
	m.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.claims, m.claimedTasks, m.claimErrors, m.claimDuration, m.attempts, m.attemptDuration, m.finishDuration)
	return m
}

// Claimed implements workers.Observer.
func (m *Metrics) Claimed(q string, n int, d time.Duration, err error) {
	m.claims.WithLabelValues(q).Inc()
	m.claimDuration.WithLabelValues(q).Observe(d.Seconds())
	if err != nil {
		m.claimErrors.WithLabelValues(q).Inc()
		return
	}
	m.claimedTasks.WithLabelValues(q).Add(float64(n))
}

// Finished implements workers.Observer.
func (m *Metrics) Finished(q string, o queue.Outcome, d time.Duration) {
	m.attempts.WithLabelValues(q, string(o)).Inc()
	m.attemptDuration.WithLabelValues(q).Observe(d.Seconds())
}

// Recorded implements workers.Observer.
func (m *Metrics) Recorded(_ int, d time.Duration, _ error) {
	m.finishDuration.Observe(d.Seconds())
}

// newMetricsHandler adds the scrape-time gauges to d.Metrics (a new Metrics
// when nil) and returns the /metrics handler.
func newMetricsHandler(d Deps) (echo.HandlerFunc, error) {
	m := d.Metrics
	if m == nil {
		m = NewMetrics()
	}
	if err := m.reg.Register(&stateCollector{d: d}); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			return nil, errors.New("web: these Metrics already serve another Server: make one per server")
		}
		return nil, err
	}
	if err := m.reg.Register(&targetsCollector{d: d}); err != nil {
		return nil, err
	}
	h := promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
	return echo.WrapHandler(h), nil
}

// stateCollector reads the queue counts from the store and the pools from this
// node when Prometheus scrapes.
type stateCollector struct{ d Deps }

var (
	descTasks = prometheus.NewDesc("readpast_tasks", "Tasks per queue and state (cluster-wide, from the store).",
		[]string{"queue", "state"}, nil)
	descPaused = prometheus.NewDesc("readpast_queue_paused", "1 when the queue is paused.", []string{"queue"}, nil)
	descBusy   = prometheus.NewDesc("readpast_workers_busy", "Workers of this node running a task now.", []string{"queue"}, nil)
	descSize   = prometheus.NewDesc("readpast_workers", "Size of this node's worker pool.", []string{"queue"}, nil)
	descUp     = prometheus.NewDesc("readpast_store_up", "1 when the store answered the scrape's query.", nil, nil)
	descBuild  = prometheus.NewDesc("readpast_build_info", "Always 1; labels say the version.", []string{"version"}, nil)
	descLogins = prometheus.NewDesc("readpast_store_sessions_opened_total",
		"Store sessions (logins) this node's pool has opened; rate(...[5m]) * 60 is logins per minute, near 0 on an idle node.", nil, nil)
)

// sessionCounter is a store that counts the sessions its pool opens (SQL
// Server's, whose logins a DBA audits).
type sessionCounter interface{ SessionsOpened() int64 }

// Describe implements prometheus.Collector.
func (sc *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descTasks, descPaused, descBusy, descSize, descUp, descBuild, descLogins} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (sc *stateCollector) Collect(ch chan<- prometheus.Metric) {
	d := sc.d
	ch <- prometheus.MustNewConstMetric(descBuild, prometheus.GaugeValue, 1, d.Version)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	qs, err := d.Store.Queues(ctx)
	up := 1.0
	if err != nil {
		up = 0
		d.Logger.Warn("metrics: reading queue counts", "err", err)
	}
	ch <- prometheus.MustNewConstMetric(descUp, prometheus.GaugeValue, up)
	if sc, ok := queue.Unwrap(d.Store).(sessionCounter); ok {
		ch <- prometheus.MustNewConstMetric(descLogins, prometheus.CounterValue, float64(sc.SessionsOpened()))
	}
	for _, q := range qs {
		for _, st := range queue.States {
			ch <- prometheus.MustNewConstMetric(descTasks, prometheus.GaugeValue, float64(q.Counts[st]), q.Name, string(st))
		}
		paused := 0.0
		if q.Paused {
			paused = 1
		}
		ch <- prometheus.MustNewConstMetric(descPaused, prometheus.GaugeValue, paused, q.Name)
	}
	if d.Node == nil {
		return
	}
	for _, p := range d.Node.Snapshot().Pools {
		ch <- prometheus.MustNewConstMetric(descBusy, prometheus.GaugeValue, float64(p.Running), p.Queue)
		ch <- prometheus.MustNewConstMetric(descSize, prometheus.GaugeValue, float64(p.Size), p.Queue)
	}
}
