package target

import (
	"context"
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	mssql "github.com/microsoft/go-mssqldb"
)

// SessionLost reports whether err says the database session was lost, rather
// than that a statement failed: the connection was closed or reset, the
// server was shut down or restarted, or an administrator ended the session
// (pg_terminate_backend, KILL). Such an error is a fault of the server or the
// network, not of the body that ran (issue 25): the workers give the attempt
// back without counting it against max_attempts. It is read from errors of a
// target's Run and of a store's calls alike (both wrap with %w), on the
// drivers' own types, which stay in this package.
//
// A context's end is no loss: a timeout or a cancel stopped the body. Nor
// is a session that could not be opened: the target is down, and the attempt
// fails and backs off as before, rather than being given back at once and
// claimed again in a loop for as long as the outage lasts.
func SessionLost(err error) bool {
	var nc notConnected
	var ce *pgconn.ConnectError
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) ||
		errors.As(err, &nc) || errors.As(err, &ce) {
		return false
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		// 57P01 admin_shutdown (pg_terminate_backend, a fast or smart
		// shutdown), 57P02 crash_shutdown, 57P03 cannot_connect_now (the
		// server is starting or stopping), class 08 connection_exception.
		return pe.Code == "57P01" || pe.Code == "57P02" || pe.Code == "57P03" || strings.HasPrefix(pe.Code, "08")
	}
	var me mssql.Error
	if errors.As(err, &me) {
		// 596: the session is in the kill state (KILL); 6005: SHUTDOWN is
		// in progress.
		return me.Number == 596 || me.Number == 6005
	}
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, net.ErrClosed) || errors.Is(err, driver.ErrBadConn)
}

// notConnected marks the error of a Run that could not open its session
// (SessionLost says no), its message unchanged.
type notConnected struct{ error }

func (e notConnected) Unwrap() error { return e.error }
