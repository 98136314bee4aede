package open

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"readpast/internal/dialect"
	"readpast/internal/queue"
)

func TestOpenSQLiteAndMigrate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, err := Store(ctx, "sqlite://"+filepath.Join(t.TempDir(), "x.db"), queue.Options{})
	require.NoError(t, err)
	defer s.Close()
	require.Equal(t, dialect.SQLite, s.Dialect())
	require.NoError(t, s.Migrate(ctx))
}
