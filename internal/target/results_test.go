package target_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"readpast/internal/resultset"
	"readpast/internal/target"
	"readpast/internal/testenv"
)

// runKeeping runs body keeping up to rows result rows.
func runKeeping(t *testing.T, e *testenv.Env, tgt target.Target, rows int, body string) (target.Result, error) {
	t.Helper()
	return tgt.Run(target.WithResultRows(e.Ctx, rows), body, nil)
}

// tempTable is the dialect's statement creating a temporary table t.
func tempTable(d testenv.Dialect) string {
	if d == testenv.SQLServer {
		return "CREATE TABLE #t (v int); INSERT INTO #t VALUES (1);"
	}
	return "CREATE TEMP TABLE t (v int); INSERT INTO t VALUES (1);"
}

func col(s *resultset.Set, row, c int) *string { return s.Rows[row][c] }

// The first result sets are kept as text, NULL apart from the string 'NULL',
// statements without rows are no result set, and the row limit holds across
// the sets, saying what it left out. What the body does is the same as
// without keeping anything.
func TestResultOutputKeepsTheFirstRows(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, e *testenv.Env, tgt target.Target) {
		body := "SELECT 1 AS n, NULL AS a, 'NULL' AS b UNION ALL SELECT 2, 'x', 'y';\n" + tempTable(e.Dialect) +
			"\nSELECT 'second' AS s;\nSELECT 3 AS third;"
		res, err := runKeeping(t, e, tgt, 3, body)
		require.NoError(t, err)
		o := res.Output
		require.NotNil(t, o)
		require.Len(t, o.Sets, 3, "three result sets; the CREATE and INSERT are none: %+v", o.Sets)
		first := &o.Sets[0]
		require.Equal(t, []string{"n", "a", "b"}, first.Columns)
		require.Len(t, first.Rows, 2)
		require.Equal(t, "1", *col(first, 0, 0))
		require.Nil(t, col(first, 0, 1), "SQL NULL is kept as null")
		require.Equal(t, "NULL", *col(first, 0, 2), "the string 'NULL' is a string")
		require.Equal(t, "x", *col(first, 1, 1))
		require.Equal(t, []string{"s"}, o.Sets[1].Columns)
		require.Equal(t, "second", *col(&o.Sets[1], 0, 0))
		require.Empty(t, o.Sets[2].Rows, "the limit of 3 rows was reached")
		require.Contains(t, o.Truncated, "result_rows", "it says what it left out")

		plain, err := tgt.Run(e.Ctx, body, nil)
		require.NoError(t, err)
		require.Nil(t, plain.Output, "a run not asked to keep output keeps none")
		require.Equal(t, plain.RowsAffected, res.RowsAffected, "keeping output changes nothing the body does")
		// The session was reset after the run that kept output: its
		// temporary table is gone, so a new run can make it again.
		_, err = runKeeping(t, e, tgt, 3, tempTable(e.Dialect))
		require.NoError(t, err)

		exact, err := runKeeping(t, e, tgt, 2, "SELECT 1 AS n UNION ALL SELECT 2;")
		require.NoError(t, err)
		require.Empty(t, exact.Output.Truncated, "a result that fits the limit is whole")
	})
}

// Columns past MaxColumns and text past MaxBytes are left out, and said so;
// a value cut ends with the mark.
func TestResultOutputColumnAndByteLimits(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, e *testenv.Env, tgt target.Target) {
		cols := make([]string, resultset.MaxColumns+10)
		for i := range cols {
			cols[i] = fmt.Sprintf("%d AS c%d", i, i)
		}
		res, err := runKeeping(t, e, tgt, 10, "SELECT "+strings.Join(cols, ", ")+";")
		require.NoError(t, err)
		require.Len(t, res.Output.Sets[0].Columns, resultset.MaxColumns)
		require.Len(t, res.Output.Sets[0].Rows[0], resultset.MaxColumns)
		require.Contains(t, res.Output.Truncated, "columns")

		big := map[testenv.Dialect]string{
			testenv.SQLServer: "SELECT REPLICATE(CAST('x' AS varchar(max)), 70000) AS big UNION ALL SELECT 'after';",
			testenv.Postgres:  "SELECT repeat('x', 70000) AS big UNION ALL SELECT 'after';",
			testenv.SQLite:    "SELECT replace(hex(zeroblob(35000)), '0', 'x') AS big UNION ALL SELECT 'after';",
		}[e.Dialect]
		res, err = runKeeping(t, e, tgt, 10, big)
		require.NoError(t, err)
		v := *res.Output.Sets[0].Rows[0][0]
		require.True(t, strings.HasSuffix(v, resultset.CutMark), "a value cut at the byte limit ends with the mark")
		require.LessOrEqual(t, len(v), resultset.MaxBytes)
		require.Len(t, res.Output.Sets[0].Rows, 1, "nothing is kept after the byte limit")
		require.Contains(t, res.Output.Truncated, "KiB")
	})
}

// Binary values are hexadecimal; a body that fails after a result set keeps
// that set and reports its error.
func TestResultOutputBinaryAndErrors(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, e *testenv.Env, tgt target.Target) {
		bin := map[testenv.Dialect]string{
			testenv.SQLServer: "SELECT CAST(0x0102FF AS varbinary(3)) AS b, CAST('6F9619FF-8B86-D011-B42D-00C04FC964FF' AS uniqueidentifier) AS g;",
			testenv.Postgres:  `SELECT '\x0102ff'::bytea AS b;`,
			testenv.SQLite:    "SELECT x'0102ff' AS b;",
		}[e.Dialect]
		res, err := runKeeping(t, e, tgt, 10, bin)
		require.NoError(t, err)
		require.Equal(t, "0x0102ff", strings.ToLower(*res.Output.Sets[0].Rows[0][0]))
		if e.Dialect == testenv.SQLServer {
			require.Equal(t, "6F9619FF-8B86-D011-B42D-00C04FC964FF", *res.Output.Sets[0].Rows[0][1], "a uniqueidentifier reads as SQL Server writes it")
		}

		fail := map[testenv.Dialect]string{
			testenv.SQLServer: "SELECT 'before' AS s;\nRAISERROR('boom', 16, 1);",
			testenv.Postgres:  "SELECT 'before' AS s;\nDO $$ BEGIN RAISE EXCEPTION 'boom'; END $$;",
			testenv.SQLite:    "SELECT 'before' AS s;\nSELECT * FROM boom;",
		}[e.Dialect]
		res, err = runKeeping(t, e, tgt, 10, fail)
		require.ErrorContains(t, err, "boom")
		require.NotNil(t, res.Output, "the result set before the error is kept")
		require.Equal(t, "before", *res.Output.Sets[0].Rows[0][0])

		// Several batches: each one's result sets, in order.
		res, err = runKeeping(t, e, tgt, 10, "SELECT 'one' AS a;\nGO\nSELECT 'two' AS b;")
		require.NoError(t, err)
		require.Len(t, res.Output.Sets, 2)
		require.Equal(t, "two", *res.Output.Sets[1].Rows[0][0])
	})
}
