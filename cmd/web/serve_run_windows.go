//go:build windows

package main

import (
	"context"
	"log/slog"
	"os"
	"time"

	"github.com/kardianos/service"
)

// maxServiceGrace bounds the drain under the Windows service control manager,
// which kills a service that has not stopped within WaitToKillServiceTimeout
// (20 s by default) at shutdown: the drain, then HTTP's and the store's own
// shutdown, must fit in it.
const maxServiceGrace = 15 * time.Second

// runServe runs serve: in a console as anywhere else, and under the service
// control manager as a Windows service, whose Stop is serve's drain and whose
// log lines go to the Application event log (source "readpast").
func runServe(ctx context.Context, cfg config, log *slog.Logger) error {
	if service.Interactive() {
		return serve(ctx, cfg, log)
	}
	p := &program{parent: ctx}
	s, err := service.New(p, &service.Config{Name: serviceName})
	if err != nil {
		return err
	}
	if events, err := s.Logger(nil); err == nil {
		log = slog.New(newEventLogHandler(events, logLevel(cfg.LogLevel)))
	} else {
		log.Warn("the event log cannot be opened; logging to standard error, which a service discards", "err", err)
	}
	if cfg.Grace > maxServiceGrace {
		log.Warn("the service manager allows about 20 s for a stop: the drain is cut to fit", "grace", cfg.Grace, "now", maxServiceGrace)
		cfg.Grace = maxServiceGrace
	}
	p.serve = func(ctx context.Context) error { return serve(ctx, cfg, log) }
	p.exited = func(err error) {
		// Ending with a failure lets the service's recovery (restart) act.
		log.Error("serve stopped by itself; the service ends so that its recovery restarts it", "err", err)
		os.Exit(1)
	}
	return s.Run()
}
