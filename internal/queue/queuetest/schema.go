package queuetest

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"readpast/internal/queue"
)

var schemaTests = map[string]func(*testing.T, Harness){
	"migrate_twice_is_noop": func(t *testing.T, h Harness) {
		b := setup(t, h)
		b.enqueue(t, queue.NewTask{Body: "SELECT 1"})
		require.NoError(t, b.s.Migrate(b.ctx), "a second Migrate must be a no-op")
		st, err := b.s.SchemaVersion(b.ctx)
		require.NoError(t, err)
		latest, err := queue.LatestMigration(b.s.Dialect())
		require.NoError(t, err)
		require.Equal(t, queue.SchemaStatus{Version: latest, Latest: latest}, st)
		got, err := b.s.List(b.ctx, queue.ListParams{})
		require.NoError(t, err)
		require.Len(t, got, 1, "the second Migrate must keep existing tasks")
	},
	"refuses_newer_schema": func(t *testing.T, h Harness) {
		b := setup(t, h)
		st, err := b.s.SchemaVersion(b.ctx)
		require.NoError(t, err)
		b.env.Exec(t, fmt.Sprintf("UPDATE %s SET version = %d", queue.MigrationsTable, st.Latest+1))
		err = b.s.Migrate(b.ctx)
		require.ErrorIs(t, err, queue.ErrSchemaTooNew, "a schema from a newer binary must be refused")
		st, err = b.s.SchemaVersion(b.ctx)
		require.NoError(t, err)
		require.Equal(t, st.Latest+1, st.Version)
	},
	"refuses_dirty_schema": func(t *testing.T, h Harness) {
		b := setup(t, h)
		b.env.Exec(t, fmt.Sprintf("UPDATE %s SET dirty = %s", queue.MigrationsTable, trueLiteral(b.s.Dialect())))
		require.ErrorIs(t, b.s.Migrate(b.ctx), queue.ErrSchemaDirty)
	},
}

func trueLiteral(dialect string) string {
	if dialect == "postgres" {
		return "true"
	}
	return "1"
}
