package workers

import (
	"context"
	"errors"
	"time"

	"readpast/internal/queue"
)

// sessionDelay: a task still running after this long has its session id written
// to the store, so the dashboard shows its SPID; shorter tasks only log it.
const sessionDelay = time.Second

// run executes one claimed task and has its end recorded. When the end goes to
// the finisher, run calls handOff just before (the slot is free from then on),
// returns true, and the finisher calls ended once the end is written or given
// up. A transactional task that committed ended inside its own transaction,
// and run returns false; so does a task whose lease was lost. Every other
// attempt, transactional or not, gets its outcome from the same rule
// (outcome: the cause that stopped it, else the body's error) and the same
// record (a release at shutdown, a finish otherwise).
func (n *Node) run(ctx context.Context, e *execution, handOff func(), ended func(*execution)) (handedOff bool) {
	t := e.task
	if t.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, t.Timeout, errTimedOut)
		defer cancel()
	}
	showSession := time.AfterFunc(sessionDelay, func() {
		if id := e.sessionID(); id != "" {
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), n.cfg.heartbeatEvery())
			defer cancel()
			if err := n.store.SetSession(sctx, t.Lease(), id); err != nil && !errors.Is(err, queue.ErrLeaseLost) {
				n.log.Warn("recording session id", "task", t.ID, "err", err)
			}
		}
	})
	defer showSession.Stop()

	a := queue.Attempt{Lease: t.Lease(), Node: n.cfg.NodeID, Worker: e.worker, StartedAt: e.started}
	var runErr error
	if t.Transactional && n.cfg.TargetIsStore {
		res, err := n.store.RunTransactional(ctx, a, t.Body)
		switch {
		case errors.Is(err, queue.ErrLeaseLost):
			n.cfg.Observer.Finished(t.Queue, queue.OutcomeLost, time.Since(a.StartedAt))
			n.log.Warn("transactional task rolled back: the lease was lost", "task", t.ID)
			return false
		case err == nil && res.Committed:
			n.cfg.Observer.Finished(t.Queue, queue.OutcomeSucceeded, time.Since(a.StartedAt))
			n.logEnd(res.Finish, nil)
			return false
		}
		// Rolled back, or the store failed: recorded below like any attempt.
		// After a store error the commit may have happened; the fenced finish
		// then changes nothing.
		a.SessionID, a.RowsAffected, a.Messages = res.SessionID, res.RowsAffected, res.Messages
		switch {
		case err != nil:
			runErr = err
		case res.BodyErr != nil:
			runErr = res.BodyErr
		default: // a store that neither committed nor said why: never a success
			runErr = errors.New("the transactional body was rolled back")
		}
	} else {
		res, err := n.target.Run(ctx, t.Body, e.setSession)
		a.SessionID, a.RowsAffected, a.Messages = res.SessionID, res.RowsAffected, res.Messages
		runErr = err
	}
	a.FinishedAt = time.Now()
	a.Outcome, a.Error = outcome(ctx, runErr)
	n.cfg.Observer.Finished(t.Queue, a.Outcome, a.FinishedAt.Sub(a.StartedAt))
	if errors.Is(context.Cause(ctx), errLeaseLost) {
		n.log.Warn("stopped a task whose lease was lost", "task", t.ID)
		return false
	}
	release := errors.Is(context.Cause(ctx), errShutdown)
	handOff()
	n.finisher.submit(a, release, func(res queue.FinishResult) {
		n.logEnd(res, res.Err)
		ended(e)
	})
	return true
}

func (n *Node) logEnd(res queue.FinishResult, err error) {
	switch {
	case errors.Is(err, queue.ErrLeaseLost):
		n.log.Warn("attempt not recorded: the lease was lost", "task", res.TaskID)
	case err != nil:
		n.log.Warn("attempt not recorded", "task", res.TaskID, "err", err)
	default:
		n.log.Debug("attempt recorded", "task", res.TaskID, "state", res.State)
	}
}
