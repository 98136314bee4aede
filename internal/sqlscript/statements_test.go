package sqlscript

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSQLiteStatements(t *testing.T) {
	cases := []struct {
		batch string
		want  []string
	}{
		{"SELECT 1", []string{"SELECT 1"}},
		{"SELECT 1; SELECT 2;", []string{"SELECT 1;", " SELECT 2;"}},
		{"SELECT ';' AS a; -- x; y\nSELECT \"b;\" FROM [c;d] WHERE `e;` /* ; */ = 1;\n-- only a comment\n",
			[]string{"SELECT ';' AS a;", " -- x; y\nSELECT \"b;\" FROM [c;d] WHERE `e;` /* ; */ = 1;"}},
		{"SELECT 'it''s; here';", []string{"SELECT 'it''s; here';"}},
		{"CREATE TEMP TRIGGER tr AFTER INSERT ON t BEGIN UPDATE t SET v = CASE WHEN v > 1 THEN 1 ELSE 2 END; DELETE FROM u; END; SELECT 1;",
			[]string{"CREATE TEMP TRIGGER tr AFTER INSERT ON t BEGIN UPDATE t SET v = CASE WHEN v > 1 THEN 1 ELSE 2 END; DELETE FROM u; END;", " SELECT 1;"}},
		{"  \n/* nothing */ ;", nil},
	}
	for _, c := range cases {
		got := SQLiteStatements(c.batch)
		require.Equal(t, c.want, got, "splitting %q", c.batch)
		require.True(t, strings.Contains(c.batch, strings.Join(got, "")) || len(got) == 0, "no byte of a statement changes")
	}
}
