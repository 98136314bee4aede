package sqlrun

import (
	"errors"
	"strings"
	"testing"

	mssql "github.com/microsoft/go-mssqldb"
	"github.com/stretchr/testify/require"
)

func TestFormatServerError(t *testing.T) {
	e := mssql.Error{Number: 208, Class: 16, State: 1, LineNo: 1, Message: "Invalid object name 'x'."}
	require.Equal(t, "Msg 208, Level 16, State 1, Line 1: Invalid object name 'x'.", formatServerError(e))

	e = mssql.Error{Number: 50000, Class: 16, State: 2, LineNo: 7, ProcName: "dbo.load", Message: "boom"}
	require.Equal(t, "Msg 50000, Level 16, State 2, Procedure dbo.load, Line 7: boom", formatServerError(e))
}

func TestDescribeShowsTheFirstServerErrorAndKeepsTheDriverError(t *testing.T) {
	first := mssql.Error{Number: 2627, Class: 14, State: 1, LineNo: 3, Message: "Violation of PRIMARY KEY constraint 'pk'."}
	last := mssql.Error{Number: 50000, Class: 16, State: 1, LineNo: 4, Message: "later"}
	last.All = []mssql.Error{first, last}

	err := DescribeMSSQL(last)
	require.Equal(t, "Msg 2627, Level 14, State 1, Line 3: Violation of PRIMARY KEY constraint 'pk'.", err.Error())
	var got mssql.Error
	require.True(t, errors.As(err, &got), "errors.As must still find the mssql.Error")
	require.EqualValues(t, 2627, got.Number)

	plain := errors.New("driver: bad connection")
	require.Same(t, plain, DescribeMSSQL(plain))
	require.NoError(t, DescribeMSSQL(nil))
}

func TestNoticeLine(t *testing.T) {
	line, ok := noticeLine(mssql.Error{Number: 0, Class: 0, Message: "hello"})
	require.True(t, ok)
	require.Equal(t, "hello", line) // PRINT, and RAISERROR at severity 10 (sent as 0)

	line, ok = noticeLine(mssql.Error{Number: 50000, Class: 5, State: 1, LineNo: 2, Message: "low"})
	require.True(t, ok)
	require.Equal(t, "Msg 50000, Level 5, State 1, Line 2: low", line)

	_, ok = noticeLine(mssql.Error{Number: 5701, Message: "Changed database context to 'db'."})
	require.False(t, ok, "sqlcmd hides 5701, and so does the log")
}

func TestEveryBatchGoesAsALanguageEvent(t *testing.T) {
	// go-mssqldb sends a text with none of these as a procedure call.
	for _, text := range []string{"RETURN", "sp_who", "dbo.p", "[dbo].[p]", "SELECT 1", "x"} {
		require.True(t, strings.ContainsAny(languageBatch(text), "\n\r;'"), "%q would go as an RPC call", text)
	}
	require.Equal(t, "SELECT 1;", languageBatch("SELECT 1;"), "a batch the driver sends as SQL is sent as written")
	require.Equal(t, "PRINT 'x'", languageBatch("PRINT 'x'"))
}
