package queue

import (
	"errors"
	"fmt"
)

// Sentinel errors. Dialects wrap them with %w and a message saying what was being done.
var (
	// ErrNotFound: no task (or queue, group) with that id or name.
	ErrNotFound = errors.New("queue: not found")
	// ErrExists: a schedule (or other named object) of that name exists already.
	ErrExists = errors.New("queue: already exists")
	// ErrLeaseLost: the caller's lease on the task is no longer the current one
	// (it expired and was reclaimed, or the task was finished by someone else).
	// Nothing was changed.
	ErrLeaseLost = errors.New("queue: lease lost")
	// ErrInvalidState: the task is not in a state that allows the operation.
	ErrInvalidState = errors.New("queue: invalid state for this operation")
	// ErrSchemaTooNew: the database schema was migrated by a newer ReadPast.
	ErrSchemaTooNew = errors.New("queue: database schema is newer than this binary")
	// ErrSchemaPreRelease: the database holds the schema of a pre-release
	// ReadPast (the migration chain before the baseline), which no release
	// upgrades.
	ErrSchemaPreRelease = errors.New("queue: database holds a pre-release ReadPast schema")
	// ErrSchemaDirty: a migration failed half-way and needs a DBA's attention.
	ErrSchemaDirty = errors.New("queue: database schema is dirty")
	// ErrNotSupported: the store's database cannot do this (see Capabilities).
	ErrNotSupported = errors.New("queue: not supported by this store")
)

// ValidationError says which input field is wrong and why. Nothing was written.
type ValidationError struct {
	Field  string
	Reason string
}

func (e *ValidationError) Error() string { return fmt.Sprintf("invalid %s: %s", e.Field, e.Reason) }

// IsValidation reports whether err is (or wraps) a *ValidationError.
func IsValidation(err error) bool {
	var ve *ValidationError
	return errors.As(err, &ve)
}
