package open_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/golang-migrate/migrate/v4"
	"github.com/golang-migrate/migrate/v4/database"
	pgxmigrate "github.com/golang-migrate/migrate/v4/database/pgx/v5"
	msqlite "github.com/golang-migrate/migrate/v4/database/sqlite"
	"github.com/golang-migrate/migrate/v4/source/iofs"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/stretchr/testify/require"

	"readpast/internal/dialect"
	"readpast/internal/queue"
	"readpast/internal/testenv"
	"readpast/migrations"
)

// TestMigrationsGoDownAndUpAgain runs every down migration and every up
// migration again, one step at a time across any gap in the versions (work
// in progress elsewhere may hold some), and checks that the store reads the
// version at each step and brings an older schema up to date.
func TestMigrationsGoDownAndUpAgain(t *testing.T) {
	t.Parallel()
	for _, d := range []testenv.Dialect{testenv.SQLite, testenv.Postgres} {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			dsn := testenv.NewDSN(t, d)
			s := testenv.OpenStore(t, dsn, queue.Options{})
			require.NoError(t, s.Migrate(ctx))
			st, err := s.SchemaVersion(ctx)
			require.NoError(t, err)
			require.Equal(t, st.Latest, st.Version)

			m := migrator(t, d, dsn)
			var versions []uint
			for {
				v, _, err := m.Version()
				if errors.Is(err, migrate.ErrNilVersion) {
					break
				}
				require.NoError(t, err)
				if n := len(versions); n > 0 {
					require.Less(t, v, versions[n-1], "one step down goes to the previous version")
				}
				versions = append(versions, v)
				got, err := s.SchemaVersion(ctx)
				require.NoError(t, err)
				require.Equal(t, v, got.Version, "the store reads the version the migrations left")
				require.NoError(t, m.Steps(-1), "down from version %d", v)
			}
			require.Equal(t, st.Latest, versions[0])
			require.NoError(t, m.Up(), "every up migration again")
			require.NoError(t, m.Steps(-1), "down once more")
			require.NoError(t, s.Migrate(ctx), "the store brings an older schema up to date")
			got, err := s.SchemaVersion(ctx)
			require.NoError(t, err)
			require.Equal(t, queue.SchemaStatus{Version: st.Latest, Latest: st.Latest}, got)
		})
	}
}

// migrator is golang-migrate on the dialect's embedded migrations, on a
// database handle of its own, closed when t ends.
func migrator(t *testing.T, d testenv.Dialect, dsn string) *migrate.Migrate {
	t.Helper()
	cfgTable := migrations.Table
	var drv database.Driver
	switch d {
	case testenv.Postgres:
		cfg, err := pgx.ParseConfig(dsn)
		require.NoError(t, err)
		drv, err = pgxmigrate.WithInstance(stdlib.OpenDB(*cfg), &pgxmigrate.Config{MigrationsTable: cfgTable})
		require.NoError(t, err)
	default:
		_, path, err := dialect.Parse(dsn)
		require.NoError(t, err)
		db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
		require.NoError(t, err)
		drv, err = msqlite.WithInstance(db, &msqlite.Config{MigrationsTable: cfgTable})
		require.NoError(t, err)
	}
	src, err := iofs.New(migrations.FS, string(d))
	require.NoError(t, err)
	m, err := migrate.NewWithInstance("iofs", src, string(d), drv)
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = m.Close() })
	return m
}
