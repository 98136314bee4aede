package target

import "time"

// ConnWaiter is a target that tells how long its runs spent taking a
// connection from its pool, in all since it opened (`readpast bench`
// subtracts two readings).
type ConnWaiter interface {
	ConnWait() time.Duration
}

// ConnWait implements ConnWaiter: every Acquire's time, a wait for a free
// connection or for a new one to open included.
func (t *postgresTarget) ConnWait() time.Duration { return t.pool.Stat().AcquireDuration() }

// ConnWait implements ConnWaiter: the time spent waiting for a connection
// while the pool was at its cap.
func (t *sqliteTarget) ConnWait() time.Duration {
	return t.db.Stats().WaitDuration + t.fresh.Stats().WaitDuration
}

// ConnWait implements ConnWaiter: the time spent waiting for a connection
// while the pool was at its cap.
func (t *sqlServerTarget) ConnWait() time.Duration { return t.db.Stats().WaitDuration }
