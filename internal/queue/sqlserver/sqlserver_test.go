package sqlserver

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	mssql "github.com/microsoft/go-mssqldb"

	"readpast/internal/queue"
	"readpast/internal/queue/queuetest"
)

// dsnEnv names the SQL Server the conformance suite runs on. The login needs
// CREATE DATABASE: every test gets a fresh database, dropped afterwards.
const dsnEnv = "READPAST_TEST_MSSQL_DSN"

func TestConformance(t *testing.T) {
	t.Run("sqlserver", func(t *testing.T) {
		dsn := os.Getenv(dsnEnv)
		if dsn == "" {
			t.Skip(dsnEnv + " not set: no SQL Server to run the suite on")
		}
		queuetest.Exercise(t, queuetest.Harness{
			NewStore: func(t *testing.T) queue.Store {
				return newStore(t, dsn)
			},
			Exec: func(t *testing.T, s queue.Store, query string) {
				if _, err := s.(*Store).db.ExecContext(context.Background(), query); err != nil {
					t.Fatalf("exec %q: %v", query, err)
				}
			},
		})
	})
}

// newStore creates an empty database on the server dsn points to, opens an
// unmigrated store on it, and drops the database when the test ends.
func newStore(t *testing.T, dsn string) queue.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	name := "readpast_test_" + randomHex(t, 8)
	admin := openAdmin(t, dsn)
	// Parallel tests create databases at once; SQL Server copies model for each
	// and answers 1807 ("could not obtain exclusive lock on database 'model'")
	// when model is busy, so try a few times.
	for try := 1; ; try++ {
		_, err := admin.ExecContext(ctx, "CREATE DATABASE "+quoteName(name)+";")
		if err == nil {
			break
		}
		if !hasErrorNumber(err, 1807) || try == 5 {
			t.Fatalf("creating test database %s: %v", name, err)
		}
		time.Sleep(time.Duration(try) * 200 * time.Millisecond)
	}
	// Registered before the store's Close, so it runs after it: cleanups run
	// last in, first out.
	t.Cleanup(func() { dropDatabase(t, dsn, name) })

	store, err := Open(ctx, withDatabase(t, dsn, name), queue.Options{})
	if err != nil {
		t.Fatalf("opening a store on %s: %v", name, err)
	}
	t.Cleanup(func() {
		if err := store.Close(); err != nil {
			t.Errorf("closing the store on %s: %v", name, err)
		}
	})
	return store
}

// openAdmin opens a pool on the DSN's own database, for CREATE/DROP DATABASE.
func openAdmin(t *testing.T, dsn string) *sql.DB {
	t.Helper()
	connector, err := mssql.NewConnector(dsn)
	if err != nil {
		t.Fatalf("parsing %s: %v", dsnEnv, err)
	}
	db := sql.OpenDB(connector)
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// dropDatabase drops a test database, first throwing out any session still in
// it (a pooled connection, a claim the test left open).
func dropDatabase(t *testing.T, dsn, name string) {
	connector, err := mssql.NewConnector(dsn)
	if err != nil {
		t.Errorf("parsing %s: %v", dsnEnv, err)
		return
	}
	db := sql.OpenDB(connector)
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	q := quoteName(name)
	stmt := fmt.Sprintf("IF DB_ID(N'%s') IS NOT NULL\nBEGIN\n    ALTER DATABASE %s SET SINGLE_USER WITH ROLLBACK IMMEDIATE;\n    DROP DATABASE %s;\nEND;", name, q, q)
	if _, err := db.ExecContext(ctx, stmt); err != nil {
		t.Errorf("dropping test database %s: %v", name, err)
	}
}

// withDatabase returns dsn pointing at database name, in either DSN form
// go-mssqldb reads: a sqlserver:// URL or an ADO key=value string (where the
// last value of a key wins).
func withDatabase(t *testing.T, dsn, name string) string {
	t.Helper()
	if strings.HasPrefix(strings.ToLower(dsn), "sqlserver://") {
		u, err := url.Parse(dsn)
		if err != nil {
			t.Fatalf("parsing %s: %v", dsnEnv, err)
		}
		q := u.Query()
		q.Set("database", name)
		u.RawQuery = q.Encode()
		return u.String()
	}
	return strings.TrimRight(dsn, "; ") + ";database=" + name
}

// quoteName brackets an identifier the way QUOTENAME does.
func quoteName(s string) string { return "[" + strings.ReplaceAll(s, "]", "]]") + "]" }

func randomHex(t *testing.T, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}
