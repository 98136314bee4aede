package workers

import (
	"encoding/json"
	"sort"
	"time"

	"readpast/internal/target"
)

// WorkerInfo is what one busy worker runs, as the nodes page shows it.
type WorkerInfo struct {
	Worker    string    `json:"worker"`
	Queue     string    `json:"queue"`
	TaskID    int64     `json:"task_id"`
	SessionID string    `json:"session_id"`
	StartedAt time.Time `json:"started_at"`
	// Target is the target its body runs on ("store" for a transactional
	// task that commits with its end).
	Target string `json:"target"`
}

// PoolInfo is one queue's pool on this node.
type PoolInfo struct {
	Queue   string       `json:"queue"`
	Size    int          `json:"size"`
	Paused  bool         `json:"paused"`
	Busy    []WorkerInfo `json:"busy"`
	Running int          `json:"running"`
}

// NodeInfo is the JSON a node stores with each heartbeat.
type NodeInfo struct {
	Pools []PoolInfo `json:"pools"`
	// Targets are the targets the node serves, each with its latest
	// reachability check: names, dialects, tags, never a DSN
	// (docs/TARGETS.md). The API and the dashboard of every node learn the
	// cluster's targets from them.
	Targets []target.Status `json:"targets"`
}

// Snapshot describes the node's pools now.
func (n *Node) Snapshot() NodeInfo {
	var info NodeInfo
	for _, p := range n.pools.list() {
		p.mu.Lock()
		pi := PoolInfo{Queue: p.name, Size: p.size, Paused: p.paused, Running: p.bodies, Busy: []WorkerInfo{}}
		p.mu.Unlock()
		for _, e := range p.executions() {
			tgt := n.pools.deps.exec.targets.resolve(e.task)
			if n.pools.deps.exec.targets.transactionalHere(e.task) {
				tgt = target.StoreName
			}
			pi.Busy = append(pi.Busy, WorkerInfo{Worker: e.worker, Queue: p.name, TaskID: e.task.ID, SessionID: e.sessionID(),
				StartedAt: e.started, Target: tgt})
		}
		sort.Slice(pi.Busy, func(i, j int) bool { return pi.Busy[i].Worker < pi.Busy[j].Worker })
		info.Pools = append(info.Pools, pi)
	}
	sort.Slice(info.Pools, func(i, j int) bool { return info.Pools[i].Queue < info.Pools[j].Queue })
	info.Targets = n.pools.deps.exec.targets.set.Statuses()
	return info
}

func (n *Node) info() string {
	b, err := json.Marshal(n.Snapshot())
	if err != nil {
		return "{}"
	}
	return string(b)
}
