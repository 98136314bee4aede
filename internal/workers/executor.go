package workers

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"readpast/internal/queue"
	"readpast/internal/resultset"
	"readpast/internal/target"
)

// sessionDelay: a task still running after this long has its session id written
// to the store, so the dashboard shows its SPID; shorter tasks only log it.
const sessionDelay = time.Second

// executor runs claimed tasks' bodies for every pool of the node: on the
// target, or, for a transactional task whose target is the store, in the
// store's transaction that also records its end (Store.RunTransactional).
type executor struct {
	store        Store
	targets      *targetRouter
	nodeID       string
	storeTimeout time.Duration // bounds the session id write
	observer     Observer
	log          *slog.Logger
	// resultRows says how many result rows each queue's attempts keep.
	resultRows *resultRows
}

// run executes one claimed task and returns the attempt left to record, with
// release set when the shutdown or the fence stopped it; record is false when
// nothing is left to record: a transactional task whose end committed with
// its body (SQLite), and a task whose lease was lost belongs to another holder
// now.
// Every other attempt, transactional or not, gets its outcome from the same
// rule (outcome: the cause that stopped it, else the body's error).
func (x *executor) run(ctx context.Context, e *execution) (a queue.Attempt, release, record bool) {
	t := e.task
	if t.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, t.Timeout, errTimedOut)
		defer cancel()
	}
	if x.resultRows != nil {
		// Its queue's result_rows asks the run to keep the first rows of
		// the body's result sets (docs/QUEUE.md, "Result output").
		ctx = resultset.WithRows(ctx, x.resultRows.of(t.Queue))
	}
	// After the last change of ctx: the timer's goroutine reads it.
	showSession := time.AfterFunc(sessionDelay, func() { x.showSession(ctx, e) })
	defer showSession.Stop()

	a = queue.Attempt{Lease: t.Lease(), Node: x.nodeID, Worker: e.worker, StartedAt: e.started}
	var runErr error
	if x.targets.transactionalHere(t) {
		res, err := x.store.RunTransactional(ctx, a, t.Body)
		switch {
		case errors.Is(err, queue.ErrLeaseLost):
			x.observer.Finished(t.Queue, queue.OutcomeLost, time.Since(a.StartedAt))
			x.log.Warn("transactional task rolled back: the lease was lost", "task", t.ID)
			return a, false, false
		case err == nil && res.Committed && res.Recorded:
			x.observer.Finished(t.Queue, queue.OutcomeSucceeded, time.Since(a.StartedAt))
			logEnd(x.log, res.Finish, nil)
			return a, false, false
		case err == nil && res.Committed:
			// The body committed with a mark on its own row; its end is
			// recorded like any attempt's, and whatever records it (this
			// finish, a release, the reclaim of its lease) records a success.
			a.SessionID, a.RowsAffected, a.Messages, a.Results = res.SessionID, res.RowsAffected, res.Messages, res.Results
			a.FinishedAt = time.Now()
			a.Outcome, a.Error = queue.OutcomeSucceeded, ""
			x.observer.Finished(t.Queue, a.Outcome, a.FinishedAt.Sub(a.StartedAt))
			return a, false, true
		}
		// Rolled back, or the store failed: recorded below like any attempt.
		// After a store error the commit may have happened; the fenced finish
		// then changes nothing.
		a.SessionID, a.RowsAffected, a.Messages, a.Results = res.SessionID, res.RowsAffected, res.Messages, res.Results
		switch {
		case err != nil:
			runErr = err
		case res.BodyErr != nil:
			runErr = res.BodyErr
		default: // a store that neither committed nor said why: never a success
			runErr = errors.New("the transactional body was rolled back")
		}
	} else {
		// Named after the attempt, so the node that reclaims its lease can
		// end the session if this node freezes or is cut off (reclaim.go).
		var res target.Result
		tgt, err := x.targets.set.Get(ctx, x.targets.resolve(t))
		if err == nil {
			res, err = tgt.Run(target.WithSessionName(ctx, queue.AttemptSessionName(t.Lease())), t.Body, e.setSession)
		}
		a.SessionID, a.RowsAffected, a.Messages = res.SessionID, res.RowsAffected, res.Messages
		if res.Output != nil {
			a.Results = res.Output.Encode()
		}
		runErr = err
	}
	a.FinishedAt = time.Now()
	a.Outcome, a.Error = outcome(ctx, runErr)
	x.observer.Finished(t.Queue, a.Outcome, a.FinishedAt.Sub(a.StartedAt))
	cause := context.Cause(ctx)
	if errors.Is(cause, errLeaseLost) {
		x.log.Warn("stopped a task whose lease was lost", "task", t.ID)
		return a, false, false
	}
	release = releasesAfter(cause, a.Outcome)
	switch {
	case release && errors.Is(cause, errFenced):
		a.Uncounted = true // the node lost its store: no fault of the body
	case !release && errors.Is(runErr, target.ErrNotServed):
		// Its queue's default target changed, since the claim, to one this
		// node does not serve: give it back for a node that does (this one
		// stops claiming such tasks at its next read of the settings).
		a.Uncounted, release = true, true
		x.log.Info("gave back a task whose target this node does not serve", "task", t.ID, "err", runErr)
	case !release && a.Outcome == queue.OutcomeFailed && target.SessionLost(runErr) && t.Attempts < t.MaxAttempts+maxFaultGiveBacks:
		a.Error = errSessionLost + a.Error
		a.Uncounted, release = true, true
		x.log.Warn("the database session was lost under a task; giving it back without counting the attempt",
			"task", t.ID, "err", runErr)
	}
	return a, release, true
}

// maxFaultGiveBacks bounds the attempts given back for a lost session beyond
// a task's max_attempts: a body that ends its own session (SELECT
// pg_terminate_backend(pg_backend_pid())) looks like a fault of the server,
// and must not run forever. Past it, a lost session counts like any error.
const maxFaultGiveBacks = 10

// errSessionLost starts the error of an attempt given back because its
// database session was lost (target.SessionLost).
const errSessionLost = "the database session was lost (a fault of the server or the network, not of the body: " +
	"the task runs again at once, and the attempt does not count against max_attempts): "

// unstarted returns the attempt left to record for a task stopped before its
// body started (pool.await): nothing for a lost lease; an operator's cancel
// ends it cancelled; given back (shutdown, pause, no slot in time), it is
// released to run again at once.
func (x *executor) unstarted(ctx context.Context, e *execution) (a queue.Attempt, release, record bool) {
	t := e.task
	now := time.Now()
	a = queue.Attempt{Lease: t.Lease(), Node: x.nodeID, StartedAt: now, FinishedAt: now}
	cause := context.Cause(ctx)
	if errors.Is(cause, errLeaseLost) {
		return a, false, false
	}
	a.Outcome, a.Error = outcome(ctx, errNotStarted)
	x.observer.Finished(t.Queue, a.Outcome, 0)
	release = releasesAfter(cause, a.Outcome)
	a.Uncounted = release && errors.Is(cause, errFenced)
	return a, release, true
}

// errNotStarted is the error of a task stopped before its body started for
// a cause outcome does not name (none is expected: every stop names one).
var errNotStarted = errors.New("stopped before its body started")

// showSession writes the session id of a task that runs long to its row.
func (x *executor) showSession(ctx context.Context, e *execution) {
	id := e.sessionID()
	if id == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), x.storeTimeout)
	defer cancel()
	if err := x.store.SetSession(ctx, e.task.Lease(), id); err != nil && !errors.Is(err, queue.ErrLeaseLost) {
		x.log.Warn("recording session id", "task", e.task.ID, "err", err)
	}
}
