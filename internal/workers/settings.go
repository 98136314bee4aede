package workers

import (
	"context"
	"log/slog"
	"time"
)

// settingsWatcher applies the queue settings kept in the database
// (readpast_queues: workers, paused) to this node's pools, re-reading them
// every second by default, so a change made on any dashboard applies on every
// node within a second. A queue seen for the first time gets its pool.
type settingsWatcher struct {
	lifecycle
	store          Store
	interval       time.Duration
	defaultWorkers int // a queue's pool size when its row sets none
	// apply sizes, pauses or resumes the queue's pool, making it if new.
	apply func(queue string, size int, paused bool)
	// setDefault records each queue's default target (targets.go).
	setDefault func(queue, target string)
	// setResultRows records each queue's result_rows (results.go).
	setResultRows func(queue string, rows int)
	log           *slog.Logger
}

// Start re-reads the settings every interval until ctx ends or Stop. The
// node reads them once itself first (refresh), so it starts with its pools.
func (s *settingsWatcher) Start(ctx context.Context) {
	s.start(ctx, func(ctx context.Context) { every(ctx, s.interval, false, s.refresh) })
}

// refresh reads the settings once and applies them; a failed read keeps the
// pools as they are until the next one.
func (s *settingsWatcher) refresh(ctx context.Context) {
	qs, err := s.store.QueueSettings(ctx)
	if err != nil {
		if ctx.Err() == nil {
			s.log.Warn("reading queue settings", "err", err)
		}
		return
	}
	for _, q := range qs {
		size := s.defaultWorkers
		if q.Workers != nil {
			size = *q.Workers
		}
		if s.setDefault != nil {
			s.setDefault(q.Name, q.DefaultTarget)
		}
		if s.setResultRows != nil {
			s.setResultRows(q.Name, q.ResultRows)
		}
		s.apply(q.Name, size, q.Paused)
	}
}
