package ui

import (
	"context"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"readpast/internal/ops"
	"readpast/web/templates"
)

// nodes lists the registered nodes with their pools and what every busy worker
// runs, with the target session id (SPID on SQL Server, backend pid on PostgreSQL).
func (u *Pages) nodes(c echo.Context) error {
	ctx, cancel := ops.Bound(c.Request().Context())
	defer cancel()
	list, err := u.nodeViews(ctx)
	if err != nil {
		return err
	}
	v := templates.Nodes{Page: u.page(c, "nodes", "Nodes", templates.Live{View: "nodes"}, nil), Nodes: list}
	return render(c, 200, templates.NodesPage(v))
}

// nodeViews reads the nodes for the page. Live nodes come first, this one at
// the top; gone and stopped ones last.
func (u *views) nodeViews(ctx context.Context) ([]templates.NodeView, error) {
	nodes, err := u.cluster(ctx)
	if err != nil {
		return nil, err
	}
	return u.nodeViewsOf(nodes), nil
}

// nodeViewsOf lays out nodes already read.
func (u *views) nodeViewsOf(nodes []clusterNode) []templates.NodeView {
	now := u.now()
	var live, rest []templates.NodeView
	for _, n := range nodes {
		v := templates.NodeView{ID: n.ID, Host: n.Hostname, PID: n.PID, Version: n.Version, This: n.This,
			Started: showTime(n.StartedAt, now), Heartbeat: showTime(n.HeartbeatAt, now), Status: nodeStatus(n),
			Meta: nodeMeta(n.Hostname, n.PID, n.Version)}
		// The info is what the node said at its last heartbeat. A stopped node
		// drained its workers before it stopped, so none of that still runs; a
		// gone node's last word is all there is, and its workers' time stops
		// at that heartbeat rather than counting on as if they still ran.
		stopped := v.Status == "stopped"
		asOf := now
		if v.Status == "gone" {
			asOf = n.HeartbeatAt
		}
		for _, p := range n.Info.Pools {
			pv := templates.PoolView{Queue: p.Queue, Size: p.Size, Running: len(p.Busy), Paused: p.Paused}
			if stopped {
				pv.Running = 0
			}
			v.Pools = append(v.Pools, pv)
			if stopped {
				continue
			}
			for _, b := range p.Busy {
				bw := templates.BusyWorker{Worker: b.Worker, Queue: b.Queue, TaskID: b.TaskID,
					TaskURL: taskURL(b.TaskID), Session: b.SessionID, Started: showTime(b.StartedAt, now),
					For: runningFor(b.StartedAt, asOf)}
				if asOf != now && bw.For != "" {
					bw.For += " at last heartbeat"
				}
				v.Busy = append(v.Busy, bw)
			}
		}
		switch {
		case v.This:
			live = append([]templates.NodeView{v}, live...)
		case v.Status == "live":
			live = append(live, v)
		default:
			rest = append(rest, v)
		}
	}
	return append(live, rest...)
}

// nodeMeta is "host · pid 123 · v1.2", leaving out what the node did not say.
func nodeMeta(host string, pid int, version string) string {
	var parts []string
	if host != "" {
		parts = append(parts, host)
	}
	if pid > 0 {
		parts = append(parts, "pid "+strconv.Itoa(pid))
	}
	if version != "" {
		parts = append(parts, version)
	}
	return strings.Join(parts, " · ")
}
