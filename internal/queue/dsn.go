package queue

import (
	"fmt"
	"strings"
)

// DefaultSQLiteFile is the embedded default store (SPEC §2).
const DefaultSQLiteFile = "readpast.db"

// ParseDSN names the dialect a DSN selects: sqlserver://… is SQL Server,
// postgres:// or postgresql:// is PostgreSQL, sqlite://path or a bare path is a
// SQLite file (returned as sqlitePath), and "" is DefaultSQLiteFile.
func ParseDSN(dsn string) (dialect, sqlitePath string, err error) {
	lower := strings.ToLower(dsn)
	switch {
	case dsn == "":
		return "sqlite", DefaultSQLiteFile, nil
	case strings.HasPrefix(lower, "sqlserver://"):
		return "sqlserver", "", nil
	case strings.HasPrefix(lower, "postgres://"), strings.HasPrefix(lower, "postgresql://"):
		return "postgres", "", nil
	case strings.HasPrefix(lower, "sqlite://"):
		p := dsn[len("sqlite://"):]
		if p == "" {
			return "", "", fmt.Errorf("dsn %q names no SQLite file: use sqlite://path/to/file.db", dsn)
		}
		return "sqlite", p, nil
	case strings.Contains(dsn, "://"):
		scheme, _, _ := strings.Cut(dsn, "://")
		return "", "", fmt.Errorf("dsn scheme %q is not supported: use sqlserver://, postgres:// or sqlite:// (or a bare file path)", scheme)
	}
	return "sqlite", dsn, nil
}
