package main

import (
	"context"
	"fmt"
	"io"

	"readpast/internal/queue"
	"readpast/internal/queue/open"
)

// migrate applies the schema (up) or reports its version (status).
func migrate(ctx context.Context, cfg config, sub string, out io.Writer) error {
	s, err := open.Store(ctx, cfg.DSN, queue.Options{MaxBodyBytes: cfg.MaxBodyBytes})
	if err != nil {
		return err
	}
	defer s.Close()
	if sub == "up" {
		if err := s.Migrate(ctx); err != nil {
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
