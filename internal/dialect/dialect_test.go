package dialect

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParse(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		dsn     string
		dialect Dialect
		path    string
		err     string
	}{
		{"", "sqlite", DefaultSQLiteFile, ""},
		{"sqlite://data/rp.db", "sqlite", "data/rp.db", ""},
		{"SQLite:///abs/rp.db", "sqlite", "/abs/rp.db", ""},
		{"rp.db", "sqlite", "rp.db", ""},
		{"postgres://u:p@h/db?sslmode=disable", "postgres", "", ""},
		{"postgresql://h/db", "postgres", "", ""},
		{"sqlserver://u:p@h?database=ops", "sqlserver", "", ""},
		{"SQLSERVER://sa:pw@localhost", "sqlserver", "", ""},
		{"./q.db", "sqlite", "./q.db", ""},
		{"sqlite://", "", "", "names no SQLite file"},
		{"mysql://h/db", "", "", `scheme "mysql" is not supported`},
		{"rp.db\x00", "", "", "control character"},
		{"postgres://h/db\nsslmode=disable", "", "", "control character"},
		{"sqlite://r\xffp.db", "", "", "invalid UTF-8"},
	} {
		d, p, err := Parse(c.dsn)
		if c.err != "" {
			require.ErrorContains(t, err, c.err, "%q", c.dsn)
			continue
		}
		require.NoError(t, err, "%q", c.dsn)
		require.Equal(t, c.dialect, d, "%q", c.dsn)
		require.Equal(t, c.path, p, "%q", c.dsn)
	}
}

// FuzzParse: whatever the DSN, Parse does not panic, and either names
// a dialect (with the file for SQLite) or says what is wrong with the DSN.
func FuzzParse(f *testing.F) {
	f.Fuzz(func(t *testing.T, dsn string) {
		d, p, err := Parse(dsn)
		if err != nil {
			require.Contains(t, err.Error(), "dsn", "an error names what it refused: %v", err)
			require.Empty(t, d)
			return
		}
		require.Contains(t, []Dialect{SQLite, Postgres, SQLServer}, d)
		require.Equal(t, d == SQLite, p != "", "a SQLite DSN names its file, no other does: %q → %q", dsn, p)
		require.False(t, strings.ContainsRune(dsn, 0), "a NUL is refused")
	})
}
