package queue

import (
	"context"
	"fmt"
)

// AttemptSessionName is the name (PostgreSQL: application_name) a body's
// session carries while the attempt l runs it: the reclaim of l's expired
// lease finds by it the session a frozen or cut-off node left running on the
// target, and ends it before the task can run again (docs/RELIABILITY.md,
// "A partitioned node"). Only ReadPast gives a session this name, and it
// names one attempt, so ending the sessions that carry it ends nobody else's.
// It fits PostgreSQL's 63 bytes.
func AttemptSessionName(l Lease) string {
	return fmt.Sprintf("readpast task %d lease %d", l.TaskID, l.Token)
}

// LostSessionEnder ends the target sessions that the attempts of expired
// leases may still run on, before their tasks become claimable again. It is
// best effort: it logs what it could not do and never fails the reclaim.
type LostSessionEnder func(ctx context.Context, lost []Attempt)

type lostSessionEnderKey struct{}

// WithLostSessionEnder asks the store's ReclaimExpired, called with the
// returned context, to call end with the expired attempts it found before it
// ends them. It rides on the context because only the node knows its target.
// The PostgreSQL and SQL Server stores call it; SQLite's, whose reclaim runs
// inside its one writer's transaction, does not (a SQLite target has no
// sessions to end).
func WithLostSessionEnder(ctx context.Context, end LostSessionEnder) context.Context {
	return context.WithValue(ctx, lostSessionEnderKey{}, end)
}

// EndLostSessions calls the LostSessionEnder ctx carries, if any, with lost.
func EndLostSessions(ctx context.Context, lost []Attempt) {
	if end, ok := ctx.Value(lostSessionEnderKey{}).(LostSessionEnder); ok && end != nil && len(lost) > 0 {
		end(ctx, lost)
	}
}
