package sqlserver

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	mssql "github.com/microsoft/go-mssqldb"
)

// SQL Server error numbers the store reacts to.
const (
	errDeadlockVictim = 1205 // "Transaction was deadlocked ... and has been chosen as the deadlock victim"
	errInvalidObject  = 208  // "Invalid object name": usually an unmigrated database
	errDuplicateKey   = 2601 // "Cannot insert duplicate key row in object … with unique index …"
	errDuplicatePK    = 2627 // "Violation of PRIMARY KEY (or UNIQUE KEY) constraint …"
)

// deadlockRetries is how many times a deadlock victim is run again.
const deadlockRetries = 2

// serverError returns the SQL Server error carried by err, if any.
func serverError(err error) (mssql.Error, bool) {
	var e mssql.Error
	if errors.As(err, &e) {
		return e, true
	}
	var pe *mssql.Error
	if errors.As(err, &pe) && pe != nil {
		return *pe, true
	}
	return mssql.Error{}, false
}

// hasErrorNumber reports whether err carries SQL Server error n anywhere in its
// list of server messages.
func hasErrorNumber(err error, n int32) bool {
	e, ok := serverError(err)
	if !ok {
		return false
	}
	if e.Number == n {
		return true
	}
	for _, x := range e.All {
		if x.Number == n {
			return true
		}
	}
	return false
}

// isDeadlock reports whether err says this session was chosen as deadlock victim.
func isDeadlock(err error) bool { return hasErrorNumber(err, errDeadlockVictim) }

// isDuplicateKey reports whether err is a unique index or primary key
// violation: another transaction inserted the same key first.
func isDuplicateKey(err error) bool {
	return hasErrorNumber(err, errDuplicateKey) || hasErrorNumber(err, errDuplicatePK)
}

// wrap says what was being done when err happened. Context errors and queue
// sentinels pass through wrapped with %w, so errors.Is still finds them.
func wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	if hasErrorNumber(err, errInvalidObject) {
		return fmt.Errorf("sqlserver: %s: %w (is the schema migrated? run the migrate subcommand)", op, err)
	}
	return fmt.Errorf("sqlserver: %s: %w", op, err)
}

// retryDeadlock runs fn, and runs it again up to deadlockRetries times when SQL
// Server picked it as a deadlock victim. The victim's transaction has been rolled
// back whole by then (XACT_ABORT), so running it again is safe. The short,
// jittered sleep lets the winner commit first.
func retryDeadlock(ctx context.Context, fn func() error) error {
	for attempt := 0; ; attempt++ {
		err := fn()
		if err == nil || attempt >= deadlockRetries || !isDeadlock(err) {
			return err
		}
		pause := time.Duration(5+rand.IntN(20)) * time.Millisecond * time.Duration(attempt+1)
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
	}
}

// conflictRetries is how many times a batch that lost a race for a new key is
// run again.
const conflictRetries = 5

// retryConflicts is retryDeadlock for batches that insert keys another
// transaction may insert at the same moment: enqueue (a new queue, group or
// chain name, a unique key) and every batch that upserts a rollup row (a
// finish, cancel, retry or purge, a transactional completion, a schedule's
// run). On SQL Server the rollup upserts' range lock keeps a second inserter
// waiting, so only enqueue ever gets here; where it does not hold (Babelfish)
// the loser fails on the key. Either way the loser's batch was rolled back
// whole (XACT_ABORT) after waiting for the winner's commit, so running it
// again finds the winner's row.
func retryConflicts(ctx context.Context, fn func() error) error {
	for attempt := 0; ; attempt++ {
		err := retryDeadlock(ctx, fn)
		if err == nil || attempt >= conflictRetries || !isDuplicateKey(err) || ctx.Err() != nil {
			return err
		}
	}
}
