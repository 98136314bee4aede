package migrations

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/golang-migrate/migrate/v4"
	"github.com/golang-migrate/migrate/v4/database"
	"github.com/golang-migrate/migrate/v4/source/iofs"

	"readpast/internal/dialect"
	"readpast/internal/queue"
)

// Table is the golang-migrate bookkeeping table on every dialect. Versions
// count from the baseline (000001 in each dialect's folder); the pre-release
// chain kept its versions in LegacyTable.
const Table = "readpast_schema_version"

// Latest returns the highest version in the dialect's embedded folder.
func Latest(d dialect.Dialect) (uint, error) {
	versions, err := embeddedVersions(d)
	if err != nil {
		return 0, err
	}
	return versions[len(versions)-1], nil
}

// embeddedVersions lists the versions in the dialect's embedded folder, in
// ascending order.
func embeddedVersions(d dialect.Dialect) ([]uint, error) {
	entries, err := fs.ReadDir(FS, string(d))
	if err != nil {
		return nil, fmt.Errorf("reading embedded migrations for %s: %w", d, err)
	}
	var versions []uint
	for _, e := range entries {
		n, _, ok := strings.Cut(e.Name(), "_")
		if !ok {
			continue
		}
		v, err := strconv.ParseUint(n, 10, 32)
		if err == nil {
			versions = append(versions, uint(v))
		}
	}
	if len(versions) == 0 {
		return nil, fmt.Errorf("no embedded migrations for dialect %s", d)
	}
	sort.Slice(versions, func(i, j int) bool { return versions[i] < versions[j] })
	return slices.Compact(versions), nil
}

// Up applies the dialect's embedded migrations through drv; db is the same
// database, for the check that it holds no pre-release schema. It refuses a
// schema newer than the binary, and is a no-op when current.
//
// Every migration file runs all or nothing: PostgreSQL runs a file of several
// statements as one implicit transaction, golang-migrate's SQLite driver wraps
// each file in one, and every SQL Server file is a transaction of its own with
// XACT_ABORT ON (a batch cut short leaves it open until the session ends, which
// rolls it back). So a version left dirty by a failed migration means that
// migration changed nothing: Up sets the version back to the one
// before it and runs the migration again, which fails again, with its error,
// until its cause is fixed.
func Up(ctx context.Context, d dialect.Dialect, db *sql.DB, drv database.Driver) error {
	if err := refusePreRelease(ctx, d, db); err != nil {
		return err
	}
	m, err := newMigrate(d, drv)
	if err != nil {
		return err
	}
	latest, err := Latest(d)
	if err != nil {
		return err
	}
	if err := resumeDirty(ctx, m, d, db); err != nil {
		return err
	}
	if err := checkVersion(m, latest); err != nil {
		return err
	}
	if err := m.Up(); err != nil && !errors.Is(err, migrate.ErrNoChange) {
		return fmt.Errorf("applying %s migrations: %w", d, err)
	}
	return nil
}

// resumeDirty settles a dirty version before Up runs: when the migration's
// changes are all in the database (its file committed and the client died
// before golang-migrate marked the version clean, appliedChecks) the version
// is marked clean where it is; otherwise the migration failed and changed
// nothing, and retryFailed sets the version back so that it runs again.
func resumeDirty(ctx context.Context, m *migrate.Migrate, d dialect.Dialect, db *sql.DB) error {
	v, dirty, err := m.Version()
	if errors.Is(err, migrate.ErrNilVersion) || (err == nil && !dirty) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading schema version: %w", err)
	}
	applied, err := migrationApplied(ctx, d, db, v)
	if err != nil {
		return err
	}
	if !applied {
		return retryFailed(m, d)
	}
	if err := m.Force(int(v)); err != nil {
		return fmt.Errorf("marking migration %d, whose changes are all in the database, as applied: %w", v, err)
	}
	return nil
}

// retryFailed sets a dirty version back to the version before it (see
// Up: the failed migration changed nothing).
func retryFailed(m *migrate.Migrate, d dialect.Dialect) error {
	v, dirty, err := m.Version()
	if errors.Is(err, migrate.ErrNilVersion) || (err == nil && !dirty) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading schema version: %w", err)
	}
	prev, err := previousMigration(d, v)
	if err != nil {
		return err
	}
	if err := m.Force(prev); err != nil {
		return fmt.Errorf("setting the schema version back from the failed migration %d to %d: %w", v, prev, err)
	}
	return nil
}

// previousMigration is the highest embedded version below v, or -1 (no
// version) when there is none.
func previousMigration(d dialect.Dialect, v uint) (int, error) {
	versions, err := embeddedVersions(d)
	if err != nil {
		return 0, err
	}
	prev := -1
	for _, x := range versions {
		if x < v {
			prev = int(x)
		}
	}
	return prev, nil
}

// Down runs the dialect's down migrations through drv, newest first,
// until no version is applied: every ReadPast table is gone (golang-migrate's
// own version table stays, empty). A dirty version is set back first, as
// Up does.
func Down(d dialect.Dialect, drv database.Driver) error {
	m, err := newMigrate(d, drv)
	if err != nil {
		return err
	}
	if err := retryFailed(m, d); err != nil {
		return err
	}
	if err := m.Down(); err != nil && !errors.Is(err, migrate.ErrNoChange) {
		return fmt.Errorf("reverting %s migrations: %w", d, err)
	}
	return nil
}

// Status reports the applied version through drv.
func Status(d dialect.Dialect, drv database.Driver) (queue.SchemaStatus, error) {
	latest, err := Latest(d)
	if err != nil {
		return queue.SchemaStatus{}, err
	}
	v, dirty, err := drv.Version()
	if err != nil {
		return queue.SchemaStatus{}, fmt.Errorf("reading schema version: %w", err)
	}
	st := queue.SchemaStatus{Dirty: dirty, Latest: latest}
	if v > 0 {
		st.Version = uint(v)
	}
	return st, nil
}

// CheckStatus turns a status into ErrSchemaTooNew / ErrSchemaDirty, or nil
// when the store may run (including a schema older than the binary, which
// the store's Migrate brings up to date).
func CheckStatus(st queue.SchemaStatus) error {
	switch {
	case st.Dirty:
		return fmt.Errorf("%w: migration %d failed and was rolled back; fix its cause (the error of the last migrate says what), then run migrate again", queue.ErrSchemaDirty, st.Version)
	case st.Version > st.Latest:
		return fmt.Errorf("%w: the database is at version %d, this binary knows up to %d; run the newer ReadPast", queue.ErrSchemaTooNew, st.Version, st.Latest)
	}
	return nil
}

func newMigrate(d dialect.Dialect, drv database.Driver) (*migrate.Migrate, error) {
	src, err := iofs.New(FS, string(d))
	if err != nil {
		return nil, fmt.Errorf("opening embedded %s migrations: %w", d, err)
	}
	m, err := migrate.NewWithInstance("iofs", src, string(d), drv)
	if err != nil {
		return nil, fmt.Errorf("preparing %s migrations: %w", d, err)
	}
	return m, nil
}

func checkVersion(m *migrate.Migrate, latest uint) error {
	v, dirty, err := m.Version()
	if errors.Is(err, migrate.ErrNilVersion) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading schema version: %w", err)
	}
	return CheckStatus(queue.SchemaStatus{Version: v, Dirty: dirty, Latest: latest})
}
