package ui

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"github.com/labstack/echo/v4"

	"readpast/internal/ops"
	"readpast/internal/queue"
	"readpast/web/templates"
)

// queueFormState is a refused queue change, shown again with its messages:
// Queue "" is the "add a queue" form.
type queueFormState struct {
	Queue  string
	Values templates.QueueRow
	Errors map[string]string
}

// overview is the front page: throughput chart (?range=1h, 24h or 7d) and
// every queue.
func (u *Pages) overview(c echo.Context) error {
	return u.renderOverview(c, http.StatusOK, nil)
}

func (u *Pages) renderOverview(c echo.Context, status int, refused *queueFormState) error {
	rng, err := parseChartRange(c.QueryParam("range"))
	if err != nil {
		return err
	}
	ctx, cancel := ops.Bound(c.Request().Context())
	defer cancel()
	qs, err := u.store.Queues(ctx)
	if err != nil {
		return err
	}
	nodes, err := u.cluster(ctx)
	if err != nil {
		return err
	}
	v := u.overviewView(ctx, rng, qs, nodes)
	live := templates.Live{View: "overview"}
	if rng.name != chartRanges[0].name {
		live.Query = "range=" + rng.name
	}
	v.Page = u.page(c, "overview", "Overview", live, qs)
	if refused != nil {
		if refused.Queue == "" {
			v.NewQueue = refused.Values
			v.NewQueue.Errors = refused.Errors
		}
		for i := range v.Queues {
			if v.Queues[i].Name == refused.Queue {
				v.Queues[i].Workers, v.Queues[i].MaxRunning = refused.Values.Workers, refused.Values.MaxRunning
				v.Queues[i].DefaultTarget = refused.Values.DefaultTarget
				v.Queues[i].ResultRows = refused.Values.ResultRows
				v.Queues[i].Errors = refused.Errors
			}
		}
	}
	return render(c, status, templates.OverviewPage(v))
}

// overviewView builds everything of the overview but the page frame; the live
// hub uses it for the chart and sparklines.
func (u *views) overviewView(ctx context.Context, rng chartRange, qs []queue.Queue, nodes []clusterNode) templates.Overview {
	pools, running := workersByQueue(nodes)
	names := make([]string, len(qs))
	for i, q := range qs {
		names[i] = q.Name
	}
	now := u.now()
	pts, err := u.throughput.points(ctx, rng, now)
	if err != nil {
		u.log.Warn("reading the throughput rollups for the chart", "err", err)
	}
	chart, sparks := rng.draw(pts, now, running, names)
	v := templates.Overview{Chart: chart, Ranges: rangeLinks(rng), SparkUnit: rng.unit,
		QueueSetKey: queueSetKey, QueueSet: queueSet(names)}
	for _, q := range qs {
		v.Queues = append(v.Queues, queueRow(q, pools[q.Name], sparks[q.Name]))
	}
	return v
}

func queueRow(q queue.Queue, p poolTotals, spark templates.Sparkline) templates.QueueRow {
	r := templates.QueueRow{
		Name: q.Name, TasksURL: withQuery("/tasks", "queue", q.Name), Paused: q.Paused,
		Busy: strconv.Itoa(p.Busy), Size: strconv.Itoa(p.Size), Nodes: p.Nodes,
		BusyKey: busyKey(q.Name), SizeKey: sizeKey(q.Name), PausedKey: pausedKey(q.Name),
		Spark: spark, ControlsURL: "/queues/" + q.Name,
	}
	if q.Workers != nil {
		r.Workers = strconv.Itoa(*q.Workers)
	}
	r.DefaultTarget = q.DefaultTarget
	r.ResultRows = strconv.Itoa(q.ResultRows)
	if q.MaxRunning != nil {
		r.MaxRunning = strconv.Itoa(*q.MaxRunning)
	}
	var tasks int64
	for _, st := range queue.States {
		r.Counts = append(r.Counts, templates.StateCount{State: string(st), Count: q.Counts[st], Key: countKey(q.Name, st)})
		tasks += q.Counts[st]
	}
	if tasks == 0 {
		r.DeleteURL = "/queues/" + url.PathEscape(q.Name) + "/delete"
	}
	return r
}
