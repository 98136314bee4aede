package queuetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"readpast/internal/dialect"
	"readpast/internal/queue"
	"readpast/internal/testenv"
	"readpast/migrations"
)

var schemaTests = map[string]func(*testing.T, Harness){
	"migrate_twice_is_noop": func(t *testing.T, h Harness) {
		b := setup(t, h)
		b.enqueue(t, queue.NewTask{Body: "SELECT 1"})
		require.NoError(t, b.s.Migrate(b.ctx), "a second Migrate must be a no-op")
		st, err := b.s.SchemaVersion(b.ctx)
		require.NoError(t, err)
		latest, err := migrations.Latest(b.s.Dialect())
		require.NoError(t, err)
		require.Equal(t, queue.SchemaStatus{Version: latest, Latest: latest}, st)
		got, err := b.s.List(b.ctx, queue.ListParams{})
		require.NoError(t, err)
		require.Len(t, got, 1, "the second Migrate must keep existing tasks")
	},
	"migrate_down_removes_everything_and_up_again": func(t *testing.T, h Harness) {
		b := setup(t, h)
		b.enqueue(t, queue.NewTask{Body: "SELECT 1", Group: "g", Chain: "c", UniqueKey: "k"})
		require.NoError(t, b.s.MigrateDown(b.ctx))
		st, err := b.s.SchemaVersion(b.ctx)
		require.NoError(t, err)
		require.Equal(t, uint(0), st.Version, "no version is applied")
		_, err = b.s.Enqueue(b.ctx, []queue.NewTask{{Body: "SELECT 1"}})
		require.Error(t, err, "the tables are gone")
		require.NoError(t, b.s.MigrateDown(b.ctx), "reverting nothing is a no-op")
		require.NoError(t, b.s.Migrate(b.ctx), "and the schema comes back")
		got, err := b.s.List(b.ctx, queue.ListParams{})
		require.NoError(t, err)
		require.Empty(t, got, "empty")
	},
	"refuses_newer_schema": func(t *testing.T, h Harness) {
		b := setup(t, h)
		st, err := b.s.SchemaVersion(b.ctx)
		require.NoError(t, err)
		b.env.Exec(t, fmt.Sprintf("UPDATE %s SET version = %d", migrations.Table, st.Latest+1))
		err = b.s.Migrate(b.ctx)
		require.ErrorIs(t, err, queue.ErrSchemaTooNew, "a schema from a newer binary must be refused")
		st, err = b.s.SchemaVersion(b.ctx)
		require.NoError(t, err)
		require.Equal(t, st.Latest+1, st.Version)
	},
	// A migration that fails changes nothing (each file runs all or nothing),
	// and the next Migrate runs it again: here a table a DBA left behind under
	// the name the baseline creates after readpast_tasks.
	"failed_migration_changes_nothing_and_runs_again": func(t *testing.T, h Harness) {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		s, dsn := h.NewStore(t)
		testenv.ExecDSN(t, h.Dialect, dsn, "CREATE TABLE readpast_throughput (leftover int)")
		err := s.Migrate(ctx)
		require.Error(t, err, "the baseline must fail on the leftover table")
		require.ErrorContains(t, err, "readpast_throughput")
		st, err := s.SchemaVersion(ctx)
		require.NoError(t, err)
		require.Equal(t, uint(1), st.Version)
		require.True(t, st.Dirty, "the failed version is marked")
		_, err = s.Enqueue(ctx, []queue.NewTask{{Body: "SELECT 1"}})
		require.Error(t, err, "readpast_tasks, created by the failed migration before it failed, was rolled back")

		require.Error(t, s.Migrate(ctx), "run again with its cause still there, it fails again")
		testenv.ExecDSN(t, h.Dialect, dsn, "DROP TABLE readpast_throughput")
		require.NoError(t, s.Migrate(ctx), "with the cause gone, the next Migrate runs it")
		st, err = s.SchemaVersion(ctx)
		require.NoError(t, err)
		require.Equal(t, queue.SchemaStatus{Version: st.Latest, Latest: st.Latest}, st)
		_, err = s.Enqueue(ctx, []queue.NewTask{{Body: "SELECT 1"}})
		require.NoError(t, err)
	},
	// A database migrated by the pre-release chain (versions 1-14, kept in
	// migrations.LegacyTable) is refused with what to do, and left as it was:
	// the baseline would otherwise fail half-way on its first existing table.
	"refuses_pre_release_schema": func(t *testing.T, h Harness) {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		s, dsn := h.NewStore(t)
		testenv.ExecDSN(t, h.Dialect, dsn, "CREATE TABLE "+migrations.LegacyTable+" (version bigint NOT NULL, dirty "+boolType(h)+" NOT NULL)")
		testenv.ExecDSN(t, h.Dialect, dsn, "INSERT INTO "+migrations.LegacyTable+" (version, dirty) VALUES (14, "+falseValue(h)+")")
		err := s.Migrate(ctx)
		require.ErrorIs(t, err, queue.ErrSchemaPreRelease)
		require.ErrorContains(t, err, "drop every readpast_ table", "the error says what to do")
		st, err := s.SchemaVersion(ctx)
		require.NoError(t, err)
		require.Equal(t, uint(0), st.Version, "nothing of the baseline was applied")
	},
}

// boolType and falseValue spell golang-migrate's dirty column per dialect.
func boolType(h Harness) string {
	if h.Dialect == dialect.SQLServer {
		return "bit"
	}
	return "boolean"
}

func falseValue(h Harness) string {
	if h.Dialect == dialect.Postgres {
		return "false"
	}
	return "0"
}
