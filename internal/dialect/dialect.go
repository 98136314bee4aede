// Package dialect names the SQL dialects ReadPast speaks and tells which one
// a DSN selects. Every package that branches on the dialect (the stores, the
// targets, the splitter, selftest, bench) takes a Dialect, never a bare
// string.
package dialect

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Dialect is one SQL dialect: a store's, or a target's.
type Dialect string

// The dialects.
const (
	SQLite    Dialect = "sqlite"
	Postgres  Dialect = "postgres"
	SQLServer Dialect = "sqlserver"
)

// DefaultSQLiteFile is the embedded default store (SPEC §2).
const DefaultSQLiteFile = "readpast.db"

// Parse names the dialect a DSN selects: sqlserver://… is SQL Server,
// postgres:// or postgresql:// is PostgreSQL, sqlite://path or a bare path is a
// SQLite file (returned as sqlitePath), and "" is DefaultSQLiteFile.
//
// A DSN holding a control character (a NUL, a line break) or invalid UTF-8 is
// refused: no driver takes one, and it would print as something else.
func Parse(dsn string) (d Dialect, sqlitePath string, err error) {
	if i := strings.IndexFunc(dsn, func(r rune) bool { return r < 0x20 || r == 0x7f || r == utf8.RuneError }); i >= 0 {
		return "", "", fmt.Errorf("dsn holds a control character or invalid UTF-8 at byte %d: check how it was quoted", i)
	}
	lower := strings.ToLower(dsn)
	switch {
	case dsn == "":
		return SQLite, DefaultSQLiteFile, nil
	case strings.HasPrefix(lower, "sqlserver://"):
		return SQLServer, "", nil
	case strings.HasPrefix(lower, "postgres://"), strings.HasPrefix(lower, "postgresql://"):
		return Postgres, "", nil
	case strings.HasPrefix(lower, "sqlite://"):
		p := dsn[len("sqlite://"):]
		if p == "" {
			return "", "", fmt.Errorf("dsn %q names no SQLite file: use sqlite://path/to/file.db", dsn)
		}
		return SQLite, p, nil
	case strings.Contains(dsn, "://"):
		scheme, _, _ := strings.Cut(dsn, "://")
		return "", "", fmt.Errorf("dsn scheme %q is not supported: use sqlserver://, postgres:// or sqlite:// (or a bare file path)", scheme)
	}
	return SQLite, dsn, nil
}
