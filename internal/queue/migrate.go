package queue

import (
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"

	"github.com/golang-migrate/migrate/v4"
	"github.com/golang-migrate/migrate/v4/database"
	"github.com/golang-migrate/migrate/v4/source/iofs"

	"readpast/migrations"
)

// MigrationsTable is the golang-migrate bookkeeping table on every dialect.
const MigrationsTable = "readpast_schema_migrations"

// LatestMigration returns the highest version in the dialect's embedded folder.
func LatestMigration(dialect string) (uint, error) {
	entries, err := fs.ReadDir(migrations.FS, dialect)
	if err != nil {
		return 0, fmt.Errorf("reading embedded migrations for %s: %w", dialect, err)
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
		return 0, fmt.Errorf("no embedded migrations for dialect %s", dialect)
	}
	sort.Slice(versions, func(i, j int) bool { return versions[i] < versions[j] })
	return versions[len(versions)-1], nil
}

// MigrateUp applies the dialect's embedded migrations through drv. It refuses a
// schema that is dirty or newer than the binary, and is a no-op when current.
func MigrateUp(dialect string, drv database.Driver) error {
	m, err := newMigrate(dialect, drv)
	if err != nil {
		return err
	}
	latest, err := LatestMigration(dialect)
	if err != nil {
		return err
	}
	if err := checkVersion(m, latest); err != nil {
		return err
	}
	if err := m.Up(); err != nil && !errors.Is(err, migrate.ErrNoChange) {
		return fmt.Errorf("applying %s migrations: %w", dialect, err)
	}
	return nil
}

// Status reports the applied version through drv.
func Status(dialect string, drv database.Driver) (SchemaStatus, error) {
	latest, err := LatestMigration(dialect)
	if err != nil {
		return SchemaStatus{}, err
	}
	v, dirty, err := drv.Version()
	if err != nil {
		return SchemaStatus{}, fmt.Errorf("reading schema version: %w", err)
	}
	st := SchemaStatus{Dirty: dirty, Latest: latest}
	if v > 0 {
		st.Version = uint(v)
	}
	return st, nil
}

// CheckStatus turns a status into ErrSchemaTooNew / ErrSchemaDirty, or nil
// when the store may run (including a schema older than the binary, which
// Migrate brings up to date).
func CheckStatus(st SchemaStatus) error {
	switch {
	case st.Dirty:
		return fmt.Errorf("%w: migration %d failed half-way; fix it by hand, then force the version with the migrate tool", ErrSchemaDirty, st.Version)
	case st.Version > st.Latest:
		return fmt.Errorf("%w: the database is at version %d, this binary knows up to %d; run the newer ReadPast", ErrSchemaTooNew, st.Version, st.Latest)
	}
	return nil
}

func newMigrate(dialect string, drv database.Driver) (*migrate.Migrate, error) {
	src, err := iofs.New(migrations.FS, dialect)
	if err != nil {
		return nil, fmt.Errorf("opening embedded %s migrations: %w", dialect, err)
	}
	m, err := migrate.NewWithInstance("iofs", src, dialect, drv)
	if err != nil {
		return nil, fmt.Errorf("preparing %s migrations: %w", dialect, err)
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
	return CheckStatus(SchemaStatus{Version: v, Dirty: dirty, Latest: latest})
}
