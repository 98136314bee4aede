package testenv

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	mssql "github.com/microsoft/go-mssqldb"

	"readpast/internal/queue/sqlserver"
)

// createDatabase serialises CREATE and DROP DATABASE: Babelfish fails them
// when several connections run them at once ("tuple concurrently updated"),
// and SQL Server itself answers 1807 when model is busy copying.
var createDatabase sync.Mutex

// newSQLServerDatabase creates an empty database on the server MSSQLDSNEnv
// names, drops it when t ends, and returns a DSN pointing at it.
func newSQLServerDatabase(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv(MSSQLDSNEnv)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	name := "readpast_test_" + randomHex(t, 8)
	admin := openSQLServer(t, dsn)
	defer admin.Close()
	createDatabase.Lock()
	_, err := admin.ExecContext(ctx, "CREATE DATABASE "+quoteName(name)+";")
	createDatabase.Unlock()
	if err != nil {
		t.Fatalf("creating test database %s: %v", name, err)
	}
	t.Cleanup(func() { dropSQLServerDatabase(t, dsn, name) })
	return withDatabase(t, dsn, name)
}

// dropSQLServerDatabase drops a test database, first throwing out any session
// still in it (a pooled connection, a transaction a test left open). Babelfish
// has no ALTER DATABASE; it drops a database whose sessions are gone.
func dropSQLServerDatabase(t testing.TB, dsn, name string) {
	db := openSQLServer(t, dsn)
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	q := quoteName(name)
	stmt := fmt.Sprintf("IF DB_ID(N'%s') IS NOT NULL DROP DATABASE %s;", name, q)
	if !IsBabelfish(t, dsn) {
		stmt = fmt.Sprintf("IF DB_ID(N'%s') IS NOT NULL\nBEGIN\n    ALTER DATABASE %s SET SINGLE_USER WITH ROLLBACK IMMEDIATE;\n    DROP DATABASE %s;\nEND;", name, q, q)
	}
	createDatabase.Lock()
	defer createDatabase.Unlock()
	for try := 1; ; try++ {
		_, err := db.ExecContext(ctx, stmt)
		if err == nil {
			return
		}
		if try == 5 {
			t.Errorf("dropping test database %s: %v", name, err)
			return
		}
		time.Sleep(time.Duration(try) * 300 * time.Millisecond)
	}
}

// openSQLServer opens a pool on dsn.
func openSQLServer(t testing.TB, dsn string) *sql.DB {
	t.Helper()
	connector, err := mssql.NewConnector(dsn)
	if err != nil {
		t.Fatalf("parsing %s: %v", MSSQLDSNEnv, err)
	}
	return sql.OpenDB(connector)
}

var babelfish struct {
	once sync.Once
	is   bool
	err  error
}

// IsBabelfish reports whether the SQL Server of MSSQLDSNEnv is Babelfish for
// PostgreSQL (its @@VERSION says so): a TDS server that deviates from SQL
// Server in known ways (see docs/SQLSERVER.md), which tests of those ways are
// skipped on, with the reason.
func IsBabelfish(t testing.TB, dsn string) bool {
	t.Helper()
	babelfish.once.Do(func() {
		db := openSQLServer(t, dsn)
		defer db.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		var v string
		babelfish.err = db.QueryRowContext(ctx, "SELECT @@VERSION;").Scan(&v)
		babelfish.is = strings.Contains(strings.ToLower(v), "babelfish")
	})
	if babelfish.err != nil {
		t.Fatalf("reading @@VERSION of the test SQL Server: %v", babelfish.err)
	}
	return babelfish.is
}

// withDatabase returns dsn pointing at database name.
func withDatabase(t testing.TB, dsn, name string) string {
	t.Helper()
	out, err := sqlserver.DSNWithDatabase(dsn, name)
	if err != nil {
		t.Fatalf("%s: %v", MSSQLDSNEnv, err)
	}
	return out
}

// quoteName brackets an identifier the way QUOTENAME does.
func quoteName(s string) string { return "[" + strings.ReplaceAll(s, "]", "]]") + "]" }

func randomHex(t testing.TB, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// SkipOnBabelfish skips t when the Env's server is Babelfish, saying which of
// its documented deviations from SQL Server the test depends on.
func (e *Env) SkipOnBabelfish(t *testing.T, deviation string) {
	t.Helper()
	if e.Dialect == SQLServer && IsBabelfish(t, e.DSN) {
		t.Skip("Babelfish deviates from SQL Server here (docs/SQLSERVER.md): " + deviation)
	}
}

// The deviations of Babelfish from SQL Server that tests are skipped for
// (docs/SQLSERVER.md, "Babelfish deviations met"), worded for the skip
// message. A test that fails on Babelfish for any other reason is a bug in
// ReadPast's T-SQL until shown otherwise.
const (
	// BabelfishLockHints: READPAST, UPDLOCK and ROWLOCK are ignored, so a
	// claimer waits for another's rows instead of skipping them, and a read
	// WITH (UPDLOCK) locks nothing (a group counter read that way does not
	// keep a second claimer out).
	BabelfishLockHints = "ignores READPAST, UPDLOCK and ROWLOCK: a claimer waits for another's rows instead of skipping them, and a read WITH (UPDLOCK) locks nothing"
	// BabelfishJSONEscapes: OPENJSON and JSON_VALUE keep \n and \" as written.
	BabelfishJSONEscapes = `OPENJSON does not unescape \n or \" in JSON strings`
	// BabelfishIsolation: SET TRANSACTION ISOLATION LEVEL SERIALIZABLE,
	// SNAPSHOT and REPEATABLE READ are refused.
	BabelfishIsolation = "refuses SET TRANSACTION ISOLATION LEVEL SERIALIZABLE, SNAPSHOT and REPEATABLE READ"
	// BabelfishShowplan: SET SHOWPLAN_XML ON is accepted and changes nothing.
	BabelfishShowplan = "SET SHOWPLAN_XML ON is accepted and changes nothing"
	// BabelfishTryCatch: BEGIN TRY … BEGIN CATCH does not catch a conversion
	// error (SELECT CAST('x' AS int)): it ends the batch.
	BabelfishTryCatch = "BEGIN TRY does not catch a conversion error: it ends the batch"
	// BabelfishAttention: no WAITFOR, and an attention does not stop a
	// running statement.
	BabelfishAttention = "no WAITFOR, and an attention does not stop a running statement"
	// BabelfishUpdateStatistics: UPDATE STATISTICS is refused ("not
	// currently supported"); bench settles statistics with it.
	BabelfishUpdateStatistics = "refuses UPDATE STATISTICS"
)

// Scaled returns n, or a tenth of it (at least 1) on Babelfish, whose round
// trips are slow enough that a load test sized for SQL Server outlasts its
// deadline. The property tested stays the same; only the amount shrinks.
func (e *Env) Scaled(t *testing.T, n int) int {
	t.Helper()
	if e.Dialect == SQLServer && IsBabelfish(t, e.DSN) {
		return max(n/10, 1)
	}
	return n
}

// Slower returns d, or five times d on Babelfish: a wait that must outlast a
// few round trips (a task delayed past the claims that follow its enqueue).
func (e *Env) Slower(t *testing.T, d time.Duration) time.Duration {
	t.Helper()
	if e.Dialect == SQLServer && IsBabelfish(t, e.DSN) {
		return 5 * d
	}
	return d
}
