package main

import (
	"log/slog"

	"readpast/internal/alerts"
	"readpast/internal/queue"
)

// startAlerts reads the alerts configuration (--alerts-config) and returns
// the node's alerts runner; without a file the runner only purges old
// alert rows, and the Alerts page says alerts are not configured.
func startAlerts(cfg config, store queue.Store, log *slog.Logger, obs alerts.Observer) (*alerts.Runner, error) {
	var c *alerts.Config
	if cfg.AlertsConfig != "" {
		var err error
		if c, err = alerts.LoadFile(cfg.AlertsConfig); err != nil {
			return nil, err
		}
		log.Info("alerts configured", "operators", len(c.Operators), "rules", len(c.Rules))
	}
	return alerts.New(store, c, alerts.Options{Node: cfg.NodeID, Logger: log, Observer: obs}), nil
}
