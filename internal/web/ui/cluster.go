package ui

import (
	"context"
	"encoding/json"
	"strconv"
	"time"

	"readpast/internal/queue"
	"readpast/internal/workers"
)

// clusterNode is a registered node with its pools: this node's from its live
// snapshot, the others' from the info their last heartbeat stored.
type clusterNode struct {
	queue.Node
	This bool
	Info workers.NodeInfo
}

// cluster reads the registered nodes. This node appears even before its first
// heartbeat row is visible.
func (u *views) cluster(ctx context.Context) ([]clusterNode, error) {
	nodes, err := u.store.Nodes(ctx, u.goneAfter)
	if err != nil {
		return nil, err
	}
	out := make([]clusterNode, 0, len(nodes)+1)
	sawThis := false
	for _, n := range nodes {
		cn := clusterNode{Node: n}
		if u.node != nil && n.ID == u.node.ID() && n.StoppedAt.IsZero() {
			cn.This, sawThis = true, true
			cn.Gone = false
			cn.Info = u.node.Snapshot()
		} else if n.Info != "" {
			_ = json.Unmarshal([]byte(n.Info), &cn.Info) // an unreadable info shows as no pools
		}
		out = append(out, cn)
	}
	if u.node != nil && !sawThis {
		out = append([]clusterNode{{Node: queue.Node{ID: u.node.ID(), HeartbeatAt: u.now()}, This: true, Info: u.node.Snapshot()}}, out...)
	}
	return out, nil
}

// poolTotals is one queue's workers summed over the live nodes.
type poolTotals struct {
	Busy, Size, Nodes int
}

// workersByQueue sums pool sizes and busy workers per queue over live nodes,
// and lists what runs now (for the chart's running area).
func workersByQueue(nodes []clusterNode) (map[string]poolTotals, []runningSince) {
	out := map[string]poolTotals{}
	var running []runningSince
	for _, n := range nodes {
		if n.Gone || !n.StoppedAt.IsZero() {
			continue
		}
		for _, p := range n.Info.Pools {
			t := out[p.Queue]
			t.Size += p.Size
			t.Busy += len(p.Busy)
			t.Nodes++
			out[p.Queue] = t
			for _, b := range p.Busy {
				running = append(running, runningSince{started: b.StartedAt})
			}
		}
	}
	return out, running
}

// nodeStatus names a node's state for the nodes page.
func nodeStatus(n clusterNode) string {
	switch {
	case !n.StoppedAt.IsZero():
		return "stopped"
	case n.Gone:
		return "gone"
	}
	return "live"
}

// runningFor is how long a busy worker has been at its task, in whole seconds
// (so a live page changes once a second, not on every update).
func runningFor(started, now time.Time) string {
	if started.IsZero() {
		return ""
	}
	d := now.Sub(started)
	if d < time.Minute {
		return strconv.Itoa(int(d.Seconds())) + "s"
	}
	return showDuration(d)
}
