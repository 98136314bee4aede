package testpg

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

func TestMain(m *testing.M) { os.Exit(Main(m)) }

func TestNewDatabaseIsEmptyAndReachable(t *testing.T) {
	t.Parallel()
	dsn := Shared(t).NewDatabase(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connecting to %s: %v", dsn, err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_tables WHERE schemaname = 'public'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("a new database has %d tables, want 0", n)
	}
}

// TestStopStart shows a private server coming back on the same socket, the way a
// connection-loss test uses it.
func TestStopStart(t *testing.T) {
	t.Parallel()
	Shared(t) // skips when no server is installed
	srv, err := Start()
	if err != nil {
		t.Fatal(err)
	}
	// Registered before NewDatabase, so it runs after the database is dropped.
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Error(err)
		}
		if _, err := os.Stat(srv.SocketDir()); !os.IsNotExist(err) {
			t.Errorf("Close left %s behind", srv.SocketDir())
		}
	})
	dsn := srv.NewDatabase(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ping := func() error {
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			return err
		}
		return conn.Close(ctx)
	}
	if err := ping(); err != nil {
		t.Fatalf("before stop: %v", err)
	}
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := ping(); err == nil {
		t.Fatal("connected to a stopped server")
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	if err := ping(); err != nil {
		t.Fatalf("after restart: %v", err)
	}
}
