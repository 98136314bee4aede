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

// outcome maps how the body ended to the attempt's outcome.
func outcome(ctx context.Context, runErr error) (queue.Outcome, string) {
	cause := context.Cause(ctx)
	switch {
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
