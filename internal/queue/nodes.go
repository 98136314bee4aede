package queue

import (
	"context"
	"time"
)

// Node is one ReadPast process registered in the store.
type Node struct {
	ID          string
	Hostname    string
	PID         int
	Version     string
	StartedAt   time.Time
	HeartbeatAt time.Time
	StoppedAt   time.Time // zero while it runs
	Info        string    // JSON: the node's pools and what each worker runs
	Gone        bool      // stopped, or silent for longer than the gone-after threshold
}

// NodeStore registers nodes and reads them back for the dashboard.
type NodeStore interface {
	// RegisterNode inserts or replaces the node's row, started and heartbeating now.
	RegisterNode(ctx context.Context, n Node) error
	// HeartbeatNode marks the node alive now and stores its info JSON.
	HeartbeatNode(ctx context.Context, id, info string) error
	// StopNode marks the node stopped (graceful shutdown).
	StopNode(ctx context.Context, id string) error
	// Nodes lists nodes, newest heartbeat first; a node whose last heartbeat is
	// older than goneAfter (by the database clock) is Gone.
	Nodes(ctx context.Context, goneAfter time.Duration) ([]Node, error)
}

// LogQuery filters the execution log. Empty fields do not filter.
type LogQuery struct {
	TaskID  int64
	Queue   string
	Outcome Outcome
	Since   time.Time // finished at or after
	Until   time.Time // finished before
	Before  int64     // keyset cursor: only rows with id below this; 0 starts at the newest
	Limit   int       // 1–10000; 0 means 100
}

// LogStore queries and trims the execution log.
type LogStore interface {
	// Attempts returns log rows newest first, one keyset page at a time.
	Attempts(ctx context.Context, q LogQuery) ([]AttemptRecord, error)
	// PurgeAttempts deletes up to batch log rows that finished before cutoff and
	// returns how many it deleted; callers loop in small batches so that no long
	// transaction holds locks the claim path needs.
	PurgeAttempts(ctx context.Context, cutoff time.Time, batch int) (int64, error)
	// PurgeTasks deletes up to batch finished tasks that finished before cutoff.
	PurgeTasks(ctx context.Context, cutoff time.Time, batch int) (int64, error)
}

// QueueSettingsStore reads queue settings without counting tasks: the cheap read
// that every node's settings watcher makes each second.
type QueueSettingsStore interface {
	QueueSettings(ctx context.Context) ([]Queue, error)
}

// Waker is implemented by stores that can tell other nodes about new tasks
// (PostgreSQL LISTEN/NOTIFY). Listen blocks until ctx ends, calling fn with
// the queue name of each enqueue made by any node; it reconnects by itself.
type Waker interface {
	Listen(ctx context.Context, fn func(queue string)) error
}

// CheckLogQuery validates a log query and returns the effective limit.
func CheckLogQuery(q LogQuery) (int, error) {
	if q.Outcome != "" && !q.Outcome.Valid() {
		return 0, &ValidationError{Field: "outcome", Reason: "is not one of succeeded, failed, timed_out, cancelled, lost"}
	}
	if q.Queue != "" {
		if err := CheckQueueName("queue", q.Queue); err != nil {
			return 0, err
		}
	}
	switch {
	case q.Limit == 0:
		return 100, nil
	case q.Limit < 0 || q.Limit > 10000:
		return 0, &ValidationError{Field: "limit", Reason: "use 1 to 10000"}
	}
	return q.Limit, nil
}
