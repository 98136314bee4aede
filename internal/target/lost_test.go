package target

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	mssql "github.com/microsoft/go-mssqldb"
	"github.com/stretchr/testify/require"
)

// SessionLost tells a lost session (a fault of the server or the network)
// from a statement's own error and from a timeout or cancel.
func TestSessionLost(t *testing.T) {
	t.Parallel()
	wrapped := func(err error) error { return fmt.Errorf("batch 2 of 2: %w", err) }
	for _, err := range []error{
		io.EOF, io.ErrUnexpectedEOF, wrapped(io.ErrUnexpectedEOF),
		wrapped(&pgconn.PgError{Code: "57P01", Message: "terminating connection due to administrator command"}),
		&pgconn.PgError{Code: "57P03"}, &pgconn.PgError{Code: "08006"},
		wrapped(mssql.Error{Number: 596}),
	} {
		require.True(t, SessionLost(err), "%v is a lost session", err)
	}
	for _, err := range []error{
		nil, errors.New("division by zero"), context.Canceled, wrapped(context.DeadlineExceeded),
		&pgconn.PgError{Code: "22012", Message: "division by zero"}, &pgconn.PgError{Code: "57014"}, // 57014: cancelled by a timeout
		mssql.Error{Number: 8134},                             // divide by zero
		&pgconn.ConnectError{}, notConnected{wrapped(io.EOF)}, // no session was opened: the target is down
	} {
		require.False(t, SessionLost(err), "%v is no lost session", err)
	}
}
