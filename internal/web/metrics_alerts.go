package web

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"readpast/internal/alerts"
)

// alertSends counts this node's alert sends; registered on first use, so a
// node without alerts shows none.
type alertSends struct {
	once sync.Once
	vec  *prometheus.CounterVec
}

// AlertObserver is the alerts runner's observer: it counts sends in
// readpast_alert_sends_total{channel, result}.
func (m *Metrics) AlertObserver() alerts.Observer {
	a := &m.alertSends
	a.once.Do(func() {
		a.vec = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "readpast_alert_sends_total",
			Help: "Alert sends by this node, by channel kind (email, webhook) and result (sent, failed: tried again later, given_up)."},
			[]string{"channel", "result"})
		m.reg.MustRegister(a.vec)
	})
	return a
}

// Delivered implements alerts.Observer.
func (a *alertSends) Delivered(channel, result string) { a.vec.WithLabelValues(channel, result).Inc() }
