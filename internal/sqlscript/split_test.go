package sqlscript

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// texts returns the batches' texts and repeat counts, blank ones included.
func texts(t *testing.T, script string, syntax Syntax) ([]string, []int) {
	t.Helper()
	batches, err := Split(script, syntax)
	require.NoError(t, err, "%q", script)
	var got []string
	var reps []int
	var whole strings.Builder
	for _, b := range batches {
		got = append(got, b.Text)
		reps = append(reps, b.Repeat)
		whole.WriteString(b.Text + b.Separator)
	}
	require.Equal(t, script, whole.String(), "the batches and separators are the script")
	return got, reps
}

func TestSplitFollowsSqlcmd(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		script string
		syntax Syntax
		want   []string
		reps   []int
	}{
		{"no GO", "SELECT 1", TSQL, []string{"SELECT 1"}, []int{1}},
		{"empty", "", TSQL, []string{""}, []int{1}},
		{"GO alone", "SELECT 1\nGO\nSELECT 2\n", TSQL, []string{"SELECT 1\n", "SELECT 2\n"}, []int{1, 1}},
		{"any case, blanks around", "a\n  go  \nb\n\tGo\t\nc", TSQL, []string{"a\n", "b\n", "c"}, []int{1, 1, 1}},
		{"repeat count", "PRINT 1\nGO 3\nPRINT 2", TSQL, []string{"PRINT 1\n", "PRINT 2"}, []int{3, 1}},
		{"repeat count on the last line", "PRINT 1\nGO 3", TSQL, []string{"PRINT 1\n", ""}, []int{3, 1}},
		{"comment after GO", "a\nGO -- done\nb\nGO 2 -- twice\n", TSQL, []string{"a\n", "b\n", ""}, []int{1, 2, 1}},
		{"comment right after GO", "a\nGO--x\nb", TSQL, []string{"a\n", "b"}, []int{1, 1}},
		{"CRLF", "a\r\nGO\r\nb\r\nGO 2\r\nc\r\n", TSQL, []string{"a\r\n", "b\r\n", "c\r\n"}, []int{1, 2, 1}},
		{"only GO lines", "GO\nGO\n", TSQL, []string{"", "", ""}, []int{1, 1, 1}},
		{"GOTO is SQL", "GOTO done\ndone:\nSELECT 1", TSQL, []string{"GOTO done\ndone:\nSELECT 1"}, []int{1}},
		{"go_live_date is SQL", "UPDATE t SET\ngo_live_date = NULL\nGO\nb", TSQL, []string{"UPDATE t SET\ngo_live_date = NULL\n", "b"}, []int{1, 1}},
		{"go.tbl is SQL", "SELECT *\nFROM\ngo.tbl\n", TSQL, []string{"SELECT *\nFROM\ngo.tbl\n"}, []int{1}},
		{"GO; is SQL", "a\nGO;\nb", TSQL, []string{"a\nGO;\nb"}, []int{1}},
		{"GO in a string", "SELECT '\nGO\n'\nGO\nb", TSQL, []string{"SELECT '\nGO\n'\n", "b"}, []int{1, 1}},
		{"doubled quote", "SELECT 'it''s\nGO\n'\nGO\nb", TSQL, []string{"SELECT 'it''s\nGO\n'\n", "b"}, []int{1, 1}},
		{"N string", "SELECT N'a\nGO\n'\nGO\nb", TSQL, []string{"SELECT N'a\nGO\n'\n", "b"}, []int{1, 1}},
		{"GO in a line comment", "SELECT 1 -- see\nGO\nb", TSQL, []string{"SELECT 1 -- see\n", "b"}, []int{1, 1}},
		{"quote in a line comment", "SELECT 1 -- it's\nGO\nb", TSQL, []string{"SELECT 1 -- it's\n", "b"}, []int{1, 1}},
		{"GO in a block comment", "/*\nGO\n*/ SELECT 1\nGO\nb", TSQL, []string{"/*\nGO\n*/ SELECT 1\n", "b"}, []int{1, 1}},
		{"nested block comment", "/* /* */\nGO\n*/\nGO\nb", TSQL, []string{"/* /* */\nGO\n*/\n", "b"}, []int{1, 1}},
		{"bracket with a quote", "SELECT [it's]\nGO\nSELECT 2\nGO\nb", TSQL, []string{"SELECT [it's]\n", "SELECT 2\n", "b"}, []int{1, 1, 1}},
		{"bracket with ]]", "SELECT [a]]\nGO\nb]\nGO\nc", TSQL, []string{"SELECT [a]]\nGO\nb]\n", "c"}, []int{1, 1}},
		{"double quote with a quote", "SELECT \"it's\"\nGO\nSELECT 2\nGO\nb", TSQL, []string{"SELECT \"it's\"\n", "SELECT 2\n", "b"}, []int{1, 1, 1}},
		{"backslash at the end of a line in a later batch", "PRINT 'x';\nGO\nUPDATE dbo.t SET note = N'C:\\dir\\\n' WHERE id = 12345", TSQL,
			[]string{"PRINT 'x';\n", "UPDATE dbo.t SET note = N'C:\\dir\\\n' WHERE id = 12345"}, []int{1, 1}},
		{"PostgreSQL: no bracket quotes", "SELECT a[1]\nGO\nb", PostgreSQL, []string{"SELECT a[1]\n", "b"}, []int{1, 1}},
		{"PostgreSQL: a [ does not open anything", "SELECT '[' || 'x'\nGO\nb", PostgreSQL, []string{"SELECT '[' || 'x'\n", "b"}, []int{1, 1}},
		{"PostgreSQL: dollar quote", "CREATE FUNCTION f() RETURNS int AS $$\nGO\n$$ LANGUAGE sql\nGO\nb", PostgreSQL,
			[]string{"CREATE FUNCTION f() RETURNS int AS $$\nGO\n$$ LANGUAGE sql\n", "b"}, []int{1, 1}},
		{"PostgreSQL: tagged dollar quote", "DO $body$ BEGIN\nGO\n-- $$\nEND $body$\nGO\nb", PostgreSQL,
			[]string{"DO $body$ BEGIN\nGO\n-- $$\nEND $body$\n", "b"}, []int{1, 1}},
		{"PostgreSQL: $1 is no quote", "SELECT $1\nGO\nb", PostgreSQL, []string{"SELECT $1\n", "b"}, []int{1, 1}},
		{"PostgreSQL: E string with escaped quote", "SELECT E'it\\'s\nGO\n'\nGO\nb", PostgreSQL,
			[]string{"SELECT E'it\\'s\nGO\n'\n", "b"}, []int{1, 1}},
		{"PostgreSQL: a plain string keeps its backslash", "SELECT 'C:\\'\nGO\nb", PostgreSQL, []string{"SELECT 'C:\\'\n", "b"}, []int{1, 1}},
		{"SQLite: backticks", "SELECT `it's`\nGO\nb", SQLite, []string{"SELECT `it's`\n", "b"}, []int{1, 1}},
		{"SQLite: comments do not nest", "/* /* */\nGO\nb", SQLite, []string{"/* /* */\n", "b"}, []int{1, 1}},
		{"unterminated string: one batch", "SELECT 'x\nGO\nb", TSQL, []string{"SELECT 'x\nGO\nb"}, []int{1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, reps := texts(t, c.script, c.syntax)
			require.Equal(t, c.want, got)
			require.Equal(t, c.reps, reps)
		})
	}
}

func TestSplitRefusesBadGOLines(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ script, says string }{
		{"a\nGO abc\nb", `line 2 ("GO abc"): GO takes only a repeat count`},
		{"a\nGO 0\nb", "GO 0 runs nothing"},
		{"a\nGO -1\nb", "GO -1 runs nothing"},
		{"a\ngo 3 x\nb", `not "3 x"`},
		{"a\nGO 1001\n", "more than 1000 times"},
	} {
		_, err := Split(c.script, TSQL)
		var e *Error
		require.ErrorAs(t, err, &e, "%q", c.script)
		require.ErrorContains(t, err, c.says, "%q", c.script)
	}
}

func TestBatchesStartOnTheLineAfterTheirGO(t *testing.T) {
	t.Parallel()
	batches, err := Split("SELECT 1\nGO\n\nSELECT 2\nGO 2\r\nSELECT 3", TSQL)
	require.NoError(t, err)
	require.Equal(t, []int{1, 3, 6}, []int{batches[0].Line, batches[1].Line, batches[2].Line})
	require.Equal(t, "\nSELECT 2\n", batches[1].Text, "the batch starts after the GO line's own line break")
}

func TestBatchesDropsBlankOnes(t *testing.T) {
	t.Parallel()
	got, err := Batches("GO\n  \nGO\n-- only a comment\nGO\nSELECT 1\nGO\n\n", TSQL)
	require.NoError(t, err)
	require.Len(t, got, 2, "a comment is not blank: the server sees it")
	require.Equal(t, "SELECT 1\n", got[1].Text)
}

func TestRunsRepeatAndLabel(t *testing.T) {
	t.Parallel()
	runs, err := Runs("a\nGO\n\nGO\nb\nGO 2\n", TSQL)
	require.NoError(t, err)
	require.Equal(t, []Run{
		{Text: "a\n", Label: "batch 1 of 2"},
		{Text: "b\n", Label: "batch 2 of 2 (run 1 of 2)"},
		{Text: "b\n", Label: "batch 2 of 2 (run 2 of 2)"},
	}, runs)
	_, err = Runs("a\nGO x\n", TSQL)
	require.Error(t, err)
}

func TestCheckRefusesOnlyWhatNoDialectAccepts(t *testing.T) {
	t.Parallel()
	require.NoError(t, Check("SELECT 1\nGO 2\nSELECT 2"))
	require.ErrorContains(t, Check("SELECT 1\nGO x\nSELECT 2"), `line 2 ("GO x")`)
	// Inside a PostgreSQL dollar quote the line is text, so the script may
	// be meant for PostgreSQL: it is not refused before its target splits it.
	require.NoError(t, Check("DO $$\nGO x\n$$"))
}

// A script of only GO lines and white space would succeed having run
// nothing: Check refuses it (issue 25). A batch of comments still runs.
func TestCheckRefusesAScriptWithNoBatch(t *testing.T) {
	t.Parallel()
	for _, script := range []string{"GO", "GO\n", "GO\nGO\n", "\nGO 3\n  \ngo\r\n", "GO\nGO\n\t\n"} {
		require.ErrorIs(t, Check(script), ErrNoBatch, "%q", script)
	}
	for _, script := range []string{"SELECT 1\nGO", "GO\nSELECT 1", "-- only a comment\nGO", "GO\n/* note */"} {
		require.NoError(t, Check(script), "%q", script)
	}
}
