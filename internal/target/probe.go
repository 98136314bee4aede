package target

import (
	"context"
	"fmt"
	"strings"

	"readpast/internal/sqlrun"
)

// prober is a target that can say it answers and what server it is: the
// reachability check of the targets page (Set.Check).
type prober interface {
	// probe runs one cheap query on a pooled session and returns the
	// server's version.
	probe(ctx context.Context) (string, error)
}

// opener counts the sessions a target's pool holds open now: the sessions
// ReadPast holds on that server (the targets page).
type opener interface{ openSessions() int }

func (t *postgresTarget) openSessions() int  { return int(t.pool.Stat().TotalConns()) }
func (t *sqlServerTarget) openSessions() int { return t.db.Stats().OpenConnections }
func (t *sqliteTarget) openSessions() int {
	return t.db.Stats().OpenConnections + t.fresh.Stats().OpenConnections
}

func (t *postgresTarget) probe(ctx context.Context) (string, error) {
	var v string
	err := t.pool.QueryRow(ctx, "SHOW server_version").Scan(&v)
	if err != nil {
		return "", err
	}
	return "PostgreSQL " + v, nil
}

func (t *sqlServerTarget) probe(ctx context.Context) (string, error) {
	var v string
	if err := t.db.QueryRowContext(ctx, "SELECT CAST(@@VERSION AS nvarchar(400))").Scan(&v); err != nil {
		return "", sqlrun.DescribeMSSQL(err)
	}
	// The first line names the product and build; the rest is the OS.
	v, _, _ = strings.Cut(v, "\n")
	return strings.TrimSpace(v), nil
}

func (t *sqliteTarget) probe(ctx context.Context) (string, error) {
	var v string
	if err := t.db.QueryRowContext(ctx, "SELECT sqlite_version()").Scan(&v); err != nil {
		return "", fmt.Errorf("reading the SQLite file: %w", err)
	}
	return "SQLite " + v, nil
}
