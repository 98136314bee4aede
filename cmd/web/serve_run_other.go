//go:build !windows

package main

import (
	"context"
	"log/slog"
)

// runServe runs serve. systemd and launchd stop a service with SIGTERM,
// which ends ctx (main): serve drains its workers within --grace, as it does
// in a terminal or a container.
func runServe(ctx context.Context, cfg config, log *slog.Logger) error {
	return serve(ctx, cfg, log)
}
