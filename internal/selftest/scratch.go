package selftest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/user"
	"path/filepath"
	"strings"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver
	_ "modernc.org/sqlite"             // the "sqlite" driver

	"readpast/internal/appname"
	"readpast/internal/dialect"
	"readpast/internal/mssqllogin"
	"readpast/internal/queue/sqlserver"
)

// scratch is where the probes run: a database, schema or file of its own,
// made for the run and removed after it.
type scratch struct {
	dsn    string  // the store DSN of the scratch
	where  string  // how the report names it
	server string  // the server's version string
	login  string  // the login method and the principal the server says it ran as
	db     *sql.DB // the probes' own connections to the scratch
	remove func(ctx context.Context) error
	// SQL Server: the DSN's own database, the one ReadPast would use, and
	// whether OPENJSON runs there (what Migrate checks).
	storeDB  string
	openJSON bool
}

// newScratch makes the scratch for cfg.DSN's dialect.
func newScratch(ctx context.Context, d dialect.Dialect, cfg Config) (*scratch, error) {
	name := "readpast_selftest_" + randomHex(6)
	switch d {
	case dialect.SQLServer:
		return sqlServerScratch(ctx, cfg, name)
	case dialect.Postgres:
		return postgresScratch(ctx, cfg.DSN, name)
	}
	return sqliteScratch(ctx, cfg.DSN, name)
}

// sqliteScratch is a file beside the one the DSN names, so the probes run on
// the same file system.
func sqliteScratch(ctx context.Context, dsn, name string) (*scratch, error) {
	_, path, err := dialect.Parse(dsn)
	if err != nil {
		return nil, err
	}
	file := filepath.Join(filepath.Dir(path), name+".db")
	// The store's own pragmas: journal_mode then reports whether this file
	// system lets SQLite use its write-ahead log (a network share may not).
	db, err := sql.Open("sqlite", "file:"+file+"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)")
	if err != nil {
		return nil, err
	}
	var version string
	if err := db.QueryRowContext(ctx, "SELECT sqlite_version()").Scan(&version); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("creating the scratch file %s: %w", file, err)
	}
	return &scratch{dsn: "sqlite://" + file, where: file, server: "SQLite " + version, db: db, login: osLogin(),
		remove: func(context.Context) error {
			_ = db.Close()
			var errs []error
			for _, f := range []string{file, file + "-wal", file + "-shm"} {
				if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
					errs = append(errs, err)
				}
			}
			return errors.Join(errs...)
		}}, nil
}

// postgresScratch is a schema of its own in the DSN's database: the store
// puts its tables in the first schema of the search_path.
func postgresScratch(ctx context.Context, dsn, name string) (*scratch, error) {
	admin, err := sql.Open("pgx", dsn)
	if err != nil {
		return nil, err
	}
	defer admin.Close()
	var version, role string
	if err := admin.QueryRowContext(ctx, "SELECT version(), session_user").Scan(&version, &role); err != nil {
		return nil, fmt.Errorf("connecting: %w", err)
	}
	if _, err := admin.ExecContext(ctx, "CREATE SCHEMA "+name); err != nil {
		return nil, fmt.Errorf("creating the scratch schema %s (the login needs CREATE on the database): %w", name, err)
	}
	u, err := url.Parse(dsn)
	if err != nil {
		return nil, fmt.Errorf("parsing the DSN: %w", err)
	}
	q := u.Query()
	q.Set("search_path", name)
	u.RawQuery = q.Encode()
	scratchDSN := u.String()
	db, err := sql.Open("pgx", scratchDSN)
	if err != nil {
		return nil, err
	}
	drop := func(ctx context.Context) error {
		_ = db.Close()
		admin, err := sql.Open("pgx", dsn)
		if err != nil {
			return err
		}
		defer admin.Close()
		_, err = admin.ExecContext(ctx, "DROP SCHEMA "+name+" CASCADE")
		return err
	}
	return &scratch{dsn: scratchDSN, where: "schema " + name, server: firstLine(version), db: db, remove: drop,
		login: "PostgreSQL role " + role + " (the server's pg_hba.conf chose the method)"}, nil
}

// sqlServerScratch is a database of its own on the DSN's server, or the empty
// database cfg.Database names (left empty again by the down migrations).
func sqlServerScratch(ctx context.Context, cfg Config, name string) (*scratch, error) {
	sessions := appname.For(appname.Selftest, "")
	connector, login, err := mssqllogin.Connector(cfg.DSN, sessions)
	if err != nil {
		return nil, err
	}
	admin := sql.OpenDB(connector)
	defer admin.Close()
	var version, storeDB, principal string
	if err := admin.QueryRowContext(ctx, "SELECT @@VERSION, DB_NAME(), SUSER_SNAME();").Scan(&version, &storeDB, &principal); err != nil {
		return nil, fmt.Errorf("connecting with %s: %w", login, err)
	}
	login.Principal = principal // the server's word, not the DSN's
	var one int
	openJSON := admin.QueryRowContext(ctx, `SELECT COUNT(*) FROM OPENJSON(N'[1]');`).Scan(&one) == nil
	babelfish := strings.Contains(version, "Babelfish")
	storeVersioning, verr := readRowVersioning(ctx, admin, storeDB)
	own := cfg.Database == ""
	if own {
		if _, err := admin.ExecContext(ctx, "CREATE DATABASE "+quoteName(name)+";"); err != nil {
			return nil, fmt.Errorf("creating the scratch database %s (the login needs CREATE DATABASE; or give an empty database of yours with --database): %w", name, err)
		}
	} else {
		name = cfg.Database
	}
	// The lock probes run under the store database's row versioning
	// (rowVersioning). Babelfish has no ALTER DATABASE (and versions every
	// row the PostgreSQL way).
	where := "database " + name
	switch {
	case verr != nil:
		where += " (the store database's row versioning is not readable: " + verr.Error() + ")"
	case babelfish:
		where += " (row versioning as Babelfish's)"
	case own:
		if _, err := admin.ExecContext(ctx, storeVersioning.alterStatements(name)); err != nil {
			where += fmt.Sprintf(" (could not take %s of %s: %v)", storeVersioning, storeDB, err)
		} else {
			where += fmt.Sprintf(" (%s, as %s)", storeVersioning, storeDB)
		}
	default:
		if got, err := readRowVersioning(ctx, admin, name); err == nil {
			where += fmt.Sprintf(" (%s; %s has %s)", got, storeDB, storeVersioning)
		}
	}
	scratchDSN, err := sqlserver.DSNWithDatabase(cfg.DSN, name)
	if err != nil {
		return nil, err
	}
	c, _, err := mssqllogin.Connector(scratchDSN, sessions)
	if err != nil {
		return nil, err
	}
	db := sql.OpenDB(c)
	if !own {
		var tables int
		if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM sys.tables WHERE name LIKE N'readpast[_]%' AND name <> N'readpast_schema_migrations';").Scan(&tables); err != nil {
			_ = db.Close()
			return nil, fmt.Errorf("looking into database %s: %w", name, err)
		}
		if tables > 0 {
			_ = db.Close()
			return nil, fmt.Errorf("database %s holds ReadPast tables: selftest needs an empty database it may migrate up and down", name)
		}
	}
	drop := func(ctx context.Context) error {
		_ = db.Close()
		if !own {
			return nil // the down migrations emptied it (probeMigrateDown)
		}
		admin := sql.OpenDB(connector)
		defer admin.Close()
		stmt := "ALTER DATABASE " + quoteName(name) + " SET SINGLE_USER WITH ROLLBACK IMMEDIATE;\nDROP DATABASE " + quoteName(name) + ";"
		if babelfish {
			stmt = "DROP DATABASE " + quoteName(name) + ";" // no ALTER DATABASE there
		}
		_, err := admin.ExecContext(ctx, stmt)
		return err
	}
	return &scratch{dsn: scratchDSN, where: where, server: firstLine(version), db: db, remove: drop,
		storeDB: storeDB, openJSON: openJSON, login: login.String()}, nil
}

func quoteName(s string) string { return "[" + strings.ReplaceAll(s, "]", "]]") + "]" }

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(s)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// osLogin is SQLite's login: the file is opened as this process's account.
func osLogin() string {
	name := "this process's account"
	if u, err := user.Current(); err == nil {
		name = u.Username
	}
	return "file access (SQLite has no logins) as " + name
}
