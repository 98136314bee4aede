package target

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"readpast/internal/sqlrun"
)

var _ SessionEnder = (*sqlServerTarget)(nil)

// SQL Server names a session at login only (program_name), so a body's
// session carries its attempt's name in CONTEXT_INFO instead, which other
// sessions see in sys.dm_exec_sessions.context_info (Microsoft: "SET
// CONTEXT_INFO (Transact-SQL)", "sys.dm_exec_sessions (Transact-SQL)"). It is
// set in the round trip that starts the run (startRun) and cleared by the
// reset that hands the session back to the pool: sp_reset_connection resets
// CONTEXT_INFO (sqlrun.ResetMSSQL). A body that sets CONTEXT_INFO itself
// replaces the name, and its session is not found.

// namedAny is the condition that a session of sys.dm_exec_sessions (alias s)
// carries one of names.
func namedAny(names []string) string {
	conds := make([]string, len(names))
	for i, n := range names {
		conds[i] = fmt.Sprintf("SUBSTRING(s.context_info, 1, %d) = %s", len(n)+1, sqlrun.MSSQLContextInfo(n))
	}
	return "(" + strings.Join(conds, " OR ") + ")"
}

// EndSessions implements SessionEnder with KILL, which needs the login's
// ALTER ANY CONNECTION permission on SQL Server (Microsoft: "KILL
// (Transact-SQL)", Permissions): without it the server refuses, and the
// error says so; the reclaim logs it and goes on, as with any target that
// cannot end sessions. A killed session rolls back its open transaction
// before it ends (a transactional body's work is undone), which can take a
// while; EndSessions waits for it.
//
// Each KILL sits in the same batch as a new look at that session's name: a
// session id is reused once its session ends, and the batch kills an id only
// while it still carries the lost attempt's name, never a session that took
// the id since the first look.
func (t *sqlServerTarget) EndSessions(ctx context.Context, names []string) (int, error) {
	if len(names) == 0 {
		return 0, nil
	}
	conn, err := t.db.Conn(ctx)
	if err != nil {
		return 0, fmt.Errorf("connecting to the target to end lost sessions: %w", sqlrun.DescribeMSSQL(err))
	}
	defer conn.Close()
	named := namedAny(names)
	rows, err := conn.QueryContext(ctx, "SELECT s.session_id FROM sys.dm_exec_sessions s WHERE s.session_id <> @@SPID AND "+named+";")
	if err != nil {
		return 0, fmt.Errorf("finding lost sessions on the target: %w", sqlrun.DescribeMSSQL(err))
	}
	var ids []string
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return 0, fmt.Errorf("finding lost sessions on the target: %w", sqlrun.DescribeMSSQL(err))
		}
		ids = append(ids, strconv.FormatInt(id, 10))
	}
	if err := rows.Close(); err != nil {
		return 0, fmt.Errorf("finding lost sessions on the target: %w", sqlrun.DescribeMSSQL(err))
	}
	if len(ids) == 0 {
		return 0, nil
	}
	var kill strings.Builder
	for _, id := range ids {
		// KILL takes a constant session id, hence the literal (ids are numbers read above).
		fmt.Fprintf(&kill, "IF EXISTS (SELECT 1 FROM sys.dm_exec_sessions s WHERE s.session_id = %s AND %s) KILL %s;\n", id, named, id)
	}
	if _, err := conn.ExecContext(ctx, kill.String()); err != nil {
		return 0, fmt.Errorf("ending lost sessions on the target (KILL needs the login's ALTER ANY CONNECTION permission): %w",
			sqlrun.DescribeMSSQL(err))
	}
	// KILL only starts the end: wait until the sessions are gone (rolled
	// back), so the caller knows the bodies stopped before it hands their
	// tasks on.
	gone := "SELECT count(*) FROM sys.dm_exec_sessions s WHERE s.session_id IN (" + strings.Join(ids, ", ") + ") AND " + named + ";"
	for {
		var n int
		if err := conn.QueryRowContext(ctx, gone).Scan(&n); err != nil {
			return len(ids), fmt.Errorf("waiting for the lost sessions to end on the target: %w", sqlrun.DescribeMSSQL(err))
		}
		if n == 0 {
			return len(ids), nil
		}
		select {
		case <-ctx.Done():
			return len(ids), errors.New("the lost sessions on the target had not ended in time")
		case <-time.After(10 * time.Millisecond):
		}
	}
}
