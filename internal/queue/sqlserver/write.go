package sqlserver

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"time"

	"readpast/internal/queue"
)

// write runs fn, one store write, on a connection of its own. Waiting for the
// connection follows ctx; fn runs under queue.Detached, so a batch that was
// sent runs to its end and its result is read even when ctx ends meanwhile (a
// stopping node). The connection goes back to the pool only when it is known
// clean:
//   - a request the write timeout interrupted (an attention) is in an unknown
//     state, and an attention does not roll back an open transaction: closed;
//   - after any other error a batch may still have left its transaction open
//     (SET XACT_ABORT ON does not roll back on errors raised when a statement
//     is compiled, such as 208 for a missing table): rolled back here, and the
//     connection closed if that fails.
func (s *Store) write(ctx context.Context, fn func(ctx context.Context, c *sql.Conn) error) error {
	c, err := s.db.Conn(ctx)
	if err != nil {
		return err
	}
	dctx, cancel := queue.Detached(ctx)
	defer cancel()
	err = fn(dctx, c)
	switch {
	case err == nil:
	case dctx.Err() != nil:
		discard(c)
		return err
	default:
		rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, rerr := c.ExecContext(rctx, "IF @@TRANCOUNT > 0 ROLLBACK TRAN;"); rerr != nil {
			discard(c)
			return err
		}
	}
	_ = c.Close() // back to the pool
	return err
}

// discard closes c's driver connection instead of pooling it: database/sql
// closes a connection for which Raw's function returns driver.ErrBadConn.
func discard(c *sql.Conn) {
	_ = c.Raw(func(any) error { return driver.ErrBadConn })
	_ = c.Close() // sql.ErrConnDone: Raw has released it already
}

// exec runs one batch without a result set through write.
func (s *Store) exec(ctx context.Context, text string, args ...any) error {
	return s.write(ctx, func(ctx context.Context, c *sql.Conn) error {
		_, err := c.ExecContext(ctx, text, args...)
		return err
	})
}
