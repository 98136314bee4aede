package workers

import (
	"sync"

	"readpast/internal/queue"
	"readpast/internal/target"
)

// targetRouter says where a node's tasks run (docs/TARGETS.md): a task's
// own target, else its queue's default target (read with the queue
// settings each second), else the node's default. It also says which
// tasks a pool may claim: those of the targets the node serves, and those
// that name none when the node serves their queue's default.
type targetRouter struct {
	set *target.Set
	// storeIsDefault: the node's default target is the store, so a
	// transactional task that names no target commits with its end.
	storeIsDefault bool

	mu       sync.RWMutex
	defaults map[string]string // queue → its default target, when it has one
}

func newTargetRouter(set *target.Set, storeIsDefault bool) *targetRouter {
	return &targetRouter{set: set, storeIsDefault: storeIsDefault, defaults: map[string]string{}}
}

// setDefault records a queue's default target ("" none).
func (r *targetRouter) setDefault(q, t string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if t == "" {
		delete(r.defaults, q)
		return
	}
	r.defaults[q] = t
}

func (r *targetRouter) queueDefault(q string) string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.defaults[q]
}

// claimTargets are the targets whose tasks a claim of queue q takes: every
// target the node serves, and "" (the tasks that name none) unless the
// queue's default target is one the node does not serve.
func (r *targetRouter) claimTargets(q string) []string {
	names := r.set.Names()
	if d := r.queueDefault(q); d == "" || r.set.Serves(d) {
		names = append(names, "")
	}
	return names
}

// resolve names the target task t runs on.
func (r *targetRouter) resolve(t *queue.Task) string {
	if t.Target != "" {
		return t.Target
	}
	if d := r.queueDefault(t.Queue); d != "" {
		return d
	}
	return target.DefaultName
}

// transactionalHere says whether task t's body commits with its end in the
// store: a transactional task on the store, named or the node's default.
func (r *targetRouter) transactionalHere(t *queue.Task) bool {
	if !t.Transactional {
		return false
	}
	return t.Target == queue.TargetStore || (t.Target == "" && r.storeIsDefault)
}
