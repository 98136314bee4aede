package open

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"readpast/internal/queue"
)

func TestParseDSN(t *testing.T) {
	t.Parallel()
	cases := []struct{ dsn, dialect, path string }{
		{"", "sqlite", queue.DefaultSQLiteFile},
		{"sqlite://data/q.db", "sqlite", "data/q.db"},
		{"./q.db", "sqlite", "./q.db"},
		{"postgres://u@localhost/db", "postgres", ""},
		{"postgresql://u@localhost/db", "postgres", ""},
		{"sqlserver://sa:pw@localhost?database=ops", "sqlserver", ""},
		{"SQLSERVER://sa:pw@localhost", "sqlserver", ""},
	}
	for _, c := range cases {
		d, p, err := queue.ParseDSN(c.dsn)
		require.NoError(t, err, c.dsn)
		require.Equal(t, c.dialect, d, c.dsn)
		require.Equal(t, c.path, p, c.dsn)
	}
	for _, bad := range []string{"mysql://x", "sqlite://"} {
		_, _, err := queue.ParseDSN(bad)
		require.Error(t, err, bad)
	}
}

func TestOpenSQLiteAndMigrate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, err := Store(ctx, "sqlite://"+filepath.Join(t.TempDir(), "x.db"), queue.Options{})
	require.NoError(t, err)
	defer s.Close()
	require.Equal(t, "sqlite", s.Dialect())
	require.NoError(t, s.Migrate(ctx))
}
