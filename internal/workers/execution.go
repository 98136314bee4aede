package workers

import (
	"context"
	"errors"
	"sync"
	"time"

	"readpast/internal/queue"
)

// Why an execution's context was cancelled; the cause decides the outcome.
var (
	errTimedOut  = errors.New("task timeout reached")
	errCancelled = errors.New("cancelled by an operator")
	errLeaseLost = errors.New("lease lost: another node took the task over")
	errShutdown  = errors.New("released at shutdown")
	// The node could not renew the lease with the store in time (fence.go).
	errFenced = errors.New("stopped before its lease could end: this node could not reach the store to renew it " +
		"(the store did not answer its heartbeats), so another node may take the task over; given back to run again")
	// A task claimed ahead (pool) given back before its body started.
	errGivenBack = errors.New(GivenBackPrefix + "no worker freed in time (Config.AheadWait)")
	errPaused    = errors.New(GivenBackPrefix + "the queue was paused or its workers set to 0")
)

// GivenBackPrefix starts the error of an attempt whose task was claimed ahead
// and given back before its body started (logged cancelled): a reader of the
// log tells by it that the body never ran.
const GivenBackPrefix = "claimed ahead and given back unstarted: "

// releases says whether an attempt stopped by cause gives its task back to
// run again at once (Store.Release) rather than ending the attempt.
func releases(cause error) bool {
	return errors.Is(cause, errShutdown) || errors.Is(cause, errGivenBack) || errors.Is(cause, errPaused)
}

// releasesAfter says whether an attempt that ended with outcome o, stopped
// by cause, gives its task back to run again at once.
func releasesAfter(cause error, o queue.Outcome) bool {
	return releases(cause) || (errors.Is(cause, errFenced) && o != queue.OutcomeSucceeded)
}

// execution is one attempt on this node: claimed, then running once it has a
// slot (pool.grantLocked sets slot, worker and started, then closes granted).
type execution struct {
	task    *queue.Task
	slot    int // -1 until granted
	granted chan struct{}
	worker  string
	started time.Time
	cancel  context.CancelCauseFunc

	mu      sync.Mutex
	session string
	renewed time.Time // when the last claim or heartbeat of the lease the store answered was sent
	fenced  bool
}

// renew records that the store answered a renewal of the lease sent at sent.
func (e *execution) renew(sent time.Time) {
	e.mu.Lock()
	if sent.After(e.renewed) {
		e.renewed = sent
	}
	e.mu.Unlock()
}

func (e *execution) renewedAt() time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.renewed
}

// fence stops the execution with errFenced; true the first time.
func (e *execution) fence() bool {
	e.mu.Lock()
	first := !e.fenced
	e.fenced = true
	e.mu.Unlock()
	if first {
		e.cancel(errFenced)
	}
	return first
}

func (e *execution) setSession(id string) {
	e.mu.Lock()
	e.session = id
	e.mu.Unlock()
}

func (e *execution) sessionID() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.session
}

// outcome maps how the body ended to the attempt's outcome. A body the fence
// stopped is given back like one stopped at shutdown (releasesAfter), unless
// it had already succeeded: then its success is recorded if the store still
// takes it.
func outcome(ctx context.Context, runErr error) (queue.Outcome, string) {
	cause := context.Cause(ctx)
	switch {
	case errors.Is(cause, errFenced) && runErr != nil:
		return queue.OutcomeCancelled, errFenced.Error()
	case errors.Is(cause, errTimedOut):
		return queue.OutcomeTimedOut, errTimedOut.Error()
	case errors.Is(cause, errCancelled):
		return queue.OutcomeCancelled, errCancelled.Error()
	case releases(cause):
		return queue.OutcomeCancelled, cause.Error()
	case runErr == nil:
		return queue.OutcomeSucceeded, ""
	}
	return queue.OutcomeFailed, runErr.Error()
}
