// Package testenv is the one test environment of every package: the dialects
// that can run here, a fresh database per test, a migrated store on it, its
// target, and the helpers tests share. SQLite runs always; PostgreSQL on a
// private server the tests start (internal/testpg); SQL Server whenever
// READPAST_TEST_MSSQL_DSN names one, with a database created per test.
//
// It imports the store and target packages, so their own tests that use it are
// external test packages (package x_test); it does not import workers, whose
// internal tests use it.
package testenv

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"readpast/internal/dialect"
	"readpast/internal/queue"
	"readpast/internal/queue/open"
	"readpast/internal/target"
	"readpast/internal/testpg"
)

// Dialect is the product's dialect type (package dialect), named here so the
// tests that range over dialects read testenv.SQLite, testenv.Postgres, ….
type Dialect = dialect.Dialect

// The dialects.
const (
	SQLite    = dialect.SQLite
	Postgres  = dialect.Postgres
	SQLServer = dialect.SQLServer
)

// MSSQLDSNEnv names the SQL Server the tests run on. The login needs CREATE
// DATABASE: every test gets a database of its own, dropped afterwards.
const MSSQLDSNEnv = "READPAST_TEST_MSSQL_DSN"

// Main runs the tests and stops the shared PostgreSQL server afterwards: use it
// as os.Exit(testenv.Main(m)) in TestMain.
func Main(m *testing.M) int { return testpg.Main(m) }

// Dialects lists the dialects whose database can run here: SQLite and
// PostgreSQL always (testpg skips or fails a PostgreSQL test when its server
// cannot start), SQL Server when MSSQLDSNEnv is set.
func Dialects() []Dialect {
	ds := []Dialect{SQLite, Postgres}
	if os.Getenv(MSSQLDSNEnv) != "" {
		ds = append(ds, SQLServer)
	}
	return ds
}

// NewDSN creates an empty database of dialect d for t, dropped when t ends,
// and returns its DSN.
func NewDSN(t testing.TB, d Dialect) string {
	t.Helper()
	switch d {
	case Postgres:
		return testpg.Shared(t).NewDatabase(t)
	case SQLServer:
		return newSQLServerDatabase(t)
	}
	return "sqlite://" + filepath.Join(t.TempDir(), "readpast.db")
}

// Env is one test's database: its dialect, DSN and a migrated store.
type Env struct {
	Ctx     context.Context
	Dialect Dialect
	DSN     string
	Store   queue.Store
}

// ForEachDialect runs fn as a parallel subtest per dialect of Dialects, each
// with a fresh database and a migrated store.
func ForEachDialect(t *testing.T, fn func(t *testing.T, e *Env)) {
	t.Helper()
	for _, d := range Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			fn(t, New(t, d))
		})
	}
}

// New returns an Env on a fresh database of dialect d, with a migrated store.
func New(t testing.TB, d Dialect) *Env {
	t.Helper()
	return On(t, d, NewDSN(t, d))
}

// On returns an Env on the database at dsn, of dialect d, with a migrated store.
func On(t testing.TB, d Dialect, dsn string) *Env {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	s := OpenStore(t, dsn, queue.Options{})
	require.NoError(t, s.Migrate(ctx), "migrating the %s test database", d)
	return &Env{Ctx: ctx, Dialect: d, DSN: dsn, Store: s}
}

// OpenStore opens an unmigrated store on dsn and closes it when t ends (before
// the database is dropped: cleanups run last in, first out).
func OpenStore(t testing.TB, dsn string, opts queue.Options) queue.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := open.Store(ctx, dsn, opts)
	require.NoError(t, err, "opening a store")
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// Target opens the target on the Env's database (target = store) and closes it
// when t ends.
func (e *Env) Target(t *testing.T) target.Target {
	t.Helper()
	tgt, err := target.Open(e.Ctx, e.DSN)
	require.NoError(t, err, "opening the target")
	t.Cleanup(func() { _ = tgt.Close() })
	return tgt
}

// Enqueue writes tasks and fails the test on error.
func (e *Env) Enqueue(t *testing.T, tasks ...queue.NewTask) []int64 {
	t.Helper()
	res, err := e.Store.Enqueue(e.Ctx, tasks)
	require.NoError(t, err, "enqueueing %d tasks", len(tasks))
	return queue.IDs(res)
}

// WaitState waits until task id is in state want and returns it.
func (e *Env) WaitState(t *testing.T, id int64, want queue.State, within time.Duration) *queue.Task {
	t.Helper()
	var got *queue.Task
	require.Eventually(t, func() bool {
		var err error
		got, err = e.Store.Get(e.Ctx, id)
		return err == nil && got.State == want
	}, within, 20*time.Millisecond, "task %d did not reach %s within %s (last: %+v)", id, want, within, got)
	return got
}

// ForEachDialectDSN runs fn as a parallel subtest per dialect of Dialects,
// each with a fresh, empty database and no store: for tests of the target
// executors, which need no schema.
func ForEachDialectDSN(t *testing.T, fn func(t *testing.T, e *Env)) {
	t.Helper()
	for _, d := range Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			t.Cleanup(cancel)
			fn(t, &Env{Ctx: ctx, Dialect: d, DSN: NewDSN(t, d)})
		})
	}
}
