package workers

import "sync"

// resultRows holds each queue's result_rows as the settings watcher last
// read it (settings.go): how many rows of their result sets its attempts
// keep (docs/QUEUE.md, "Result output"). A queue not in it keeps none.
type resultRows struct {
	mu     sync.RWMutex
	queues map[string]int
}

func newResultRows() *resultRows { return &resultRows{queues: map[string]int{}} }

// set records queue q's setting; 0 forgets the queue.
func (r *resultRows) set(q string, rows int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if rows <= 0 {
		delete(r.queues, q)
		return
	}
	r.queues[q] = rows
}

// of is queue q's setting, 0 when it keeps none.
func (r *resultRows) of(q string) int {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.queues[q]
}
