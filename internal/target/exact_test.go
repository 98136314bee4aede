package target_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"readpast/internal/target"
	"readpast/internal/testenv"
)

// A body reaches the server exactly as written, split on GO lines by sqlcmd's
// rules only (issue: go-mssqldb's batch.Split rewrote bodies). Each case is
// checked by its effect on the database, so a body that was cut, merged or
// edited on its way changes another row, fails, or counts other rows.
func TestBodiesRunExactlyAsWritten(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, e *testenv.Env, tgt target.Target) {
		run(t, e, tgt, "CREATE TABLE ex (id int, note varchar(100), go_live_date int)\nGO\n"+
			"INSERT INTO ex VALUES (345, 'a', 0), (12345, 'b', 0)")
		note := func(id string) int64 {
			return e.QueryInt(t, "SELECT count(*) FROM ex WHERE note = 'b' AND id = "+id)
		}

		// A backslash at the end of a line inside a string, in a later batch,
		// changes nothing else of the body: the row named is the row written.
		res := run(t, e, tgt, "SELECT 1;\nGO\nUPDATE ex SET note = 'C:\\dir\\\n' WHERE id = 12345")
		require.Equal(t, int64(0), note("12345"), "row 12345 was written")
		require.Equal(t, int64(0), e.QueryInt(t, "SELECT count(*) FROM ex WHERE id = 345 AND note <> 'a'"), "row 345 was not")
		require.Positive(t, res.RowsAffected)

		// A line that starts with "go" but is SQL is sent as SQL.
		run(t, e, tgt, "UPDATE ex SET\ngo_live_date = 7\nWHERE id = 345")
		require.Equal(t, int64(7), e.QueryInt(t, "SELECT go_live_date FROM ex WHERE id = 345"))

		// A quote inside a quoted identifier opens no string: the batches
		// after it are still separate batches.
		ident := `"it's"`
		if e.Dialect != testenv.Postgres {
			ident = "[it's]"
		}
		res = run(t, e, tgt, "CREATE TABLE "+ident+" (n int)\nGO\nINSERT INTO "+ident+" VALUES (1)\nGO\nINSERT INTO "+ident+" VALUES (2)\r\nGO 2\r\n")
		require.Equal(t, int64(3), res.RowsAffected, "three inserts in three runs")

		// GO inside a string or a comment separates nothing; block comments
		// nest on T-SQL and PostgreSQL (not on SQLite, whose comments do not).
		run(t, e, tgt, "INSERT INTO ex (id, note, go_live_date) VALUES (1, '\nGO\n', 0)\n-- GO\nGO\nUPDATE ex SET go_live_date = 1 WHERE id = 1")
		require.Equal(t, int64(1), e.QueryInt(t, "SELECT go_live_date FROM ex WHERE id = 1"))
		if e.Dialect != testenv.SQLite {
			run(t, e, tgt, "/* outer /* inner */\nGO\nstill the comment */\nUPDATE ex SET go_live_date = 2 WHERE id = 1")
			require.Equal(t, int64(2), e.QueryInt(t, "SELECT go_live_date FROM ex WHERE id = 1"))
		}

		// A bad GO line runs nothing and names the line.
		_, err := tgt.Run(e.Ctx, "UPDATE ex SET go_live_date = 3 WHERE id = 1\nGO x\n", nil)
		require.ErrorContains(t, err, `line 2 ("GO x")`)
		require.Equal(t, int64(2-btoi(e.Dialect == testenv.SQLite)), e.QueryInt(t, "SELECT go_live_date FROM ex WHERE id = 1"), "nothing ran")
	})
}

// The server receives each batch's own text: it starts on the line after its
// GO (so the server numbers lines as sqlcmd does) and ends before the next.
func TestBatchTextIsWhatTheServerReceives(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, e *testenv.Env, tgt target.Target) {
		var seen string
		switch e.Dialect {
		case testenv.SQLite:
			t.Skip("SQLite has no way to read the text of the running statement")
		case testenv.Postgres:
			run(t, e, tgt, "CREATE TABLE seen (q text)")
			seen = "INSERT INTO seen SELECT current_query()"
		case testenv.SQLServer:
			e.SkipOnBabelfish(t, "no DBCC INPUTBUFFER")
			run(t, e, tgt, "CREATE TABLE seen (q nvarchar(max))")
			seen = "INSERT INTO seen (q) SELECT event_info FROM sys.dm_exec_input_buffer(@@SPID, NULL)"
		}
		body := "SELECT 1\r\nGO\r\n" + seen + " -- it's\r\nGO 2 -- twice\r\nSELECT 2"
		run(t, e, tgt, body)
		require.Equal(t, int64(2), e.QueryInt(t, "SELECT count(*) FROM seen"), "GO 2 ran the batch twice")
		require.Equal(t, int64(2), e.QueryInt(t, "SELECT count(*) FROM seen WHERE q = '"+seen+" -- it''s\r\n'"),
			"the batch text, byte for byte, without the GO line's line break before it")
	})
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
