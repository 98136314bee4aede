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
)

// execution is one running attempt on this node.
type execution struct {
	task    *queue.Task
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
	case errors.Is(cause, errShutdown):
		return queue.OutcomeCancelled, errShutdown.Error()
	case runErr == nil:
		return queue.OutcomeSucceeded, ""
	}
	return queue.OutcomeFailed, runErr.Error()
}
