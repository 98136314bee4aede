package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"readpast/internal/queue"
	"readpast/internal/queue/open"
)

// migrateCmd is `readpast migrate [up|status] [flags]`.
func migrateCmd(ctx context.Context, args []string, getenv func(string) string, out, errOut io.Writer) int {
	sub := "up"
	if len(args) > 0 && (args[0] == "up" || args[0] == "status") {
		sub, args = args[0], args[1:]
	}
	return withConfig("migrate", "[up|status]", args, getenv, errOut, func(cfg config, _ *slog.Logger) error {
		return migrate(ctx, cfg, sub, out)
	})
}

// migrate applies the schema (up) or reports its version (status).
func migrate(ctx context.Context, cfg config, sub string, out io.Writer) error {
	s, err := open.Store(ctx, cfg.DSN, queue.Options{MaxBodyBytes: cfg.MaxBodyBytes})
	if err != nil {
		return err
	}
	defer s.Close()
	if sub == "up" {
		if err := migrateReporting(ctx, s, func(v uint, name string) {
			fmt.Fprintf(out, "applied migration %d (%s)\n", v, name)
		}); err != nil {
			return err
		}
	}
	st, err := s.SchemaVersion(ctx)
	if err != nil {
		return err
	}
	state := "up to date"
	switch {
	case st.Dirty:
		state = "DIRTY: a migration failed half-way"
	case st.Version > st.Latest:
		state = "newer than this binary"
	case st.Version < st.Latest:
		state = "behind: run readpast migrate up"
	}
	fmt.Fprintf(out, "%s store: schema version %d, this binary knows up to %d (%s)\n", s.Dialect(), st.Version, st.Latest, state)
	return nil
}
