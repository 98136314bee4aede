package main

import (
	"context"
	"io/fs"
	"strconv"
	"strings"

	"readpast/internal/dialect"
	"readpast/internal/queue"
	"readpast/migrations"
)

// migrateReporting applies the schema and calls applied for each migration it
// applied, oldest first, so that what the binary did to a DBA's database is
// in its log (serve) or on screen (migrate up). The versions come from the
// schema version before and after; when the first read fails (a database the
// store cannot read yet), Migrate still runs and says why if it refuses.
func migrateReporting(ctx context.Context, s queue.Store, applied func(version uint, name string)) error {
	before, beforeErr := s.SchemaVersion(ctx)
	if err := s.Migrate(ctx); err != nil {
		return err
	}
	if beforeErr != nil {
		return nil
	}
	after, err := s.SchemaVersion(ctx)
	if err != nil {
		return err
	}
	names := migrationNames(s.Dialect())
	for v := before.Version + 1; v <= after.Version; v++ {
		if name, ok := names[v]; ok {
			applied(v, name)
		}
	}
	return nil
}

// migrationNames maps each embedded version of d to its name: 1 → baseline
// for 000001_baseline.up.sql.
func migrationNames(d dialect.Dialect) map[uint]string {
	out := map[uint]string{}
	entries, _ := fs.ReadDir(migrations.FS, string(d)) // embedded: a read cannot fail but for a dialect without files
	for _, e := range entries {
		base, ok := strings.CutSuffix(e.Name(), ".up.sql")
		if !ok {
			continue
		}
		num, name, ok := strings.Cut(base, "_")
		if v, err := strconv.ParseUint(num, 10, 32); ok && err == nil {
			out[uint(v)] = name
		}
	}
	return out
}
