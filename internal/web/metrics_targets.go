package web

import (
	"github.com/prometheus/client_golang/prometheus"
)

// The targets' gauges (docs/TARGETS.md): this node's latest check of each
// target it serves, read from target.Set at the scrape (no query is sent).
var (
	descTargetUp = prometheus.NewDesc("readpast_target_up",
		"1 when this node's latest check reached the target, 0 when it failed (the check runs every --target-check).",
		[]string{"target", "dialect"}, nil)
	descTargetLatency = prometheus.NewDesc("readpast_target_check_seconds",
		"Round trip of this node's latest check of the target.", []string{"target"}, nil)
)

// targetsCollector reports the targets' gauges; nothing without targets.
type targetsCollector struct{ d Deps }

// Describe implements prometheus.Collector.
func (tc *targetsCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descTargetUp
	ch <- descTargetLatency
}

// Collect implements prometheus.Collector.
func (tc *targetsCollector) Collect(ch chan<- prometheus.Metric) {
	if tc.d.Targets == nil {
		return
	}
	for _, st := range tc.d.Targets.Statuses() {
		if st.Checked.IsZero() {
			continue // not checked yet: no value rather than a false 0
		}
		up := 0.0
		if st.Reachable {
			up = 1
		}
		ch <- prometheus.MustNewConstMetric(descTargetUp, prometheus.GaugeValue, up, st.Name, string(st.Dialect))
		ch <- prometheus.MustNewConstMetric(descTargetLatency, prometheus.GaugeValue, st.Latency.Seconds(), st.Name)
	}
}
