package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"readpast/internal/dialect"
	"readpast/internal/ops"
	"readpast/internal/queue"
	"readpast/internal/queue/open"
	"readpast/internal/schedule"
	"readpast/internal/target"
	"readpast/internal/web"
	"readpast/internal/workers"
)

// serveCmd is `readpast serve [flags]`, and `readpast [flags]`.
func serveCmd(ctx context.Context, args []string, getenv func(string) string, _, errOut io.Writer) int {
	return withConfig("serve", "", args, getenv, errOut, func(cfg config, log *slog.Logger) error {
		return runServe(ctx, cfg, log)
	})
}

// serve runs the dashboard, this node's scheduler and its workers until ctx
// ends, then shuts down in order: HTTP (so no new work arrives) → scheduler
// (no new fires) → workers (drain within the grace period, release the rest)
// → store and target connections. Every node runs a scheduler: there is no
// leader, the store makes each fire time one task (docs/SCHEDULES.md).
func serve(ctx context.Context, cfg config, log *slog.Logger) error {
	if cfg.NodeID == "" {
		// Named before connecting: every session carries the node's name.
		cfg.NodeID = workers.DefaultNodeID()
	}
	store, err := open.Store(ctx, cfg.DSN, queue.Options{MaxBodyBytes: cfg.MaxBodyBytes, Logger: log, Node: cfg.NodeID, DeadSessionBound: cfg.Lease})
	if err != nil {
		return startFailed(ctx, log, err)
	}
	defer store.Close()
	if err := migrateReporting(ctx, store, func(v uint, name string) {
		log.Info("schema migration applied", "version", v, "name", name)
	}); err != nil {
		return startFailed(ctx, log, err)
	}
	targets, err := target.NewSet(cfg.NodeID, cfg.DSN, cfg.TargetDSN, cfg.TargetSpecs, log)
	if err != nil {
		return startFailed(ctx, log, err)
	}
	defer targets.Close()
	// The default target opens now, as the one target did before names:
	// a node that cannot reach it does not start. Named ones open on first
	// use, so one that is down waits for its checks (docs/TARGETS.md).
	tgt, err := targets.Get(ctx, target.DefaultName)
	if err != nil {
		return startFailed(ctx, log, err)
	}
	metrics := web.NewMetrics()
	alerter, err := startAlerts(cfg, store, log, metrics.AlertObserver())
	if err != nil {
		return err
	}
	node, err := workers.New(store, tgt, workers.Config{NodeID: cfg.NodeID, Version: version, DefaultWorkers: &cfg.Workers,
		Poll: cfg.Poll, Lease: cfg.Lease, Grace: cfg.Grace, LogRetention: cfg.LogRetention, TaskRetention: cfg.TaskRetention,
		TargetIsStore: targets.IsStore(target.DefaultName), Targets: targets, Logger: log, Observer: metrics})
	if err != nil {
		return err
	}

	// A schedule that fans out is resolved by the node that fires it, among
	// the targets the live nodes publish (docs/SCHEDULES.md, "Fan-out").
	scheduler := schedule.New(store, log, schedule.Config{Poll: cfg.Poll, Enqueued: node.Wake,
		Resolve: ops.FanOutResolver(store, cfg.Lease)})

	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", cfg.Listen, err)
	}
	handler, err := web.New(web.Deps{Store: store, Node: node, Scheduler: scheduler, Logger: log, Version: version, Lease: cfg.Lease,
		OperatorToken: cfg.OperatorToken, ViewerToken: cfg.ViewerToken, MaxBodyBytes: cfg.MaxBodyBytes, Metrics: metrics,
		TargetDialect: tgt.Dialect(), Targets: targets, Alerts: alerter})
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	d, path, _ := dialect.Parse(cfg.DSN)
	where := string(d)
	if d == dialect.SQLite {
		where += " " + path
	}
	auth := "tokens"
	if cfg.OperatorToken == "" {
		auth = "local mode: no tokens, loopback only"
	}
	log.Info("ReadPast is serving", "url", "http://"+ln.Addr().String(), "store", where, "node", node.ID(), "auth", auth)

	schedCtx, stopScheduler := context.WithCancel(context.WithoutCancel(ctx))
	defer stopScheduler()
	schedDone := make(chan struct{})
	go func() { defer close(schedDone); _ = scheduler.Run(schedCtx) }()
	go targets.Watch(schedCtx, cfg.Targets.CheckEach)
	alertsCtx, stopAlerts := context.WithCancel(context.WithoutCancel(ctx))
	defer stopAlerts()
	alertsDone := make(chan struct{})
	go func() { defer close(alertsDone); _ = alerter.Run(alertsCtx) }()
	bulkDone := make(chan struct{})
	go func() { defer close(bulkDone); handler.RunBulks(schedCtx) }()
	nodeCtx, stopNode := context.WithCancel(context.WithoutCancel(ctx))
	defer stopNode()
	var wg sync.WaitGroup
	nodeErr := make(chan error, 1)
	wg.Add(2)
	go func() { defer wg.Done(); nodeErr <- node.Run(nodeCtx) }()
	httpErr := make(chan error, 1)
	go func() {
		defer wg.Done()
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			httpErr <- err
		}
	}()

	select {
	case <-ctx.Done():
		log.Info("stopping: finishing HTTP requests, then draining workers", "grace", cfg.Grace)
	case err = <-httpErr:
		log.Error("HTTP server failed; stopping", "err", err)
	case err = <-nodeErr:
		log.Error("workers stopped; stopping", "err", err)
	}
	shutCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = srv.Shutdown(shutCtx)
	if err := handler.CloseLive(shutCtx); err != nil {
		log.Warn("closing live dashboard connections", "err", err)
	}
	stopScheduler()
	<-schedDone
	<-bulkDone
	stopNode()
	wg.Wait()
	stopAlerts()
	<-alertsDone
	return err
}

// startFailed is what serve returns when starting failed: nothing, when the
// cause is a stop requested while the node was still connecting or
// migrating (a SIGTERM then ends it as cleanly as a running node, exit 0:
// it had claimed nothing), and err otherwise.
func startFailed(ctx context.Context, log *slog.Logger, err error) error {
	if ctx.Err() != nil && errors.Is(err, context.Canceled) {
		log.Info("stopped while starting", "during", err.Error())
		return nil
	}
	return err
}
