package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"readpast/internal/queue"
	"readpast/internal/testpg"
)

// The server ends a store session that sits idle in a transaction for longer
// than Options.DeadSessionBound (serve sets the lease): the session of a node
// frozen or cut off between two statements of a transaction cannot hold its
// locks for the operating system's two hours of TCP keepalive. Both pools
// carry the bound, the transactional one too.
func TestStoreSessionsIdleInTransactionAreEnded(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := Open(ctx, testpg.Shared(t).NewDatabase(t), queue.Options{DeadSessionBound: time.Second})
	if err != nil {
		t.Fatalf("opening the store: %v", err)
	}
	defer s.Close()
	for name, pool := range map[string]*pgxpool.Pool{"store": s.pool, "transactional": s.txpool} {
		conn, err := pool.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Exec(ctx, "BEGIN"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2500 * time.Millisecond) // a node that stopped answering
		_, err = conn.Exec(ctx, "SELECT 1")
		conn.Release()
		if err == nil {
			t.Errorf("%s pool: a session idle in its transaction past the bound was not ended by the server", name)
		}
	}
}
