package target

import (
	"context"
	"errors"
)

// openSQLServer is written with the SQL Server store; until then a SQL Server
// target is refused with an error that says so.
func openSQLServer(context.Context, string) (Target, error) {
	return nil, errors.New("target: SQL Server targets are not supported by this build yet")
}
