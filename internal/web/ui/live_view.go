package ui

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"time"

	"github.com/a-h/templ"

	"readpast/internal/queue"
	"readpast/internal/web/auth"
	"readpast/web/templates"
)

// liveView is what one page shows, as the hub repeats it each tick. Clients
// whose views have the same key share one set of queries and one message.
type liveView struct {
	key     string
	kind    string // overview, tasks, task, logs, nodes, schedules
	operate bool   // rows carry the operator's buttons
	tasks   queue.ListParams
	logs    queue.LogQuery
	taskID  int64
	chart   chartRange // the overview's
	back    string     // the page's URL: where its buttons come back to
}

// minInterval is how often a view's own queries run at most. The overview's
// chart moves by the minute at the finest; the nodes page moves by the
// second; tables follow every tick.
func (v liveView) minInterval(tick time.Duration) time.Duration {
	switch v.kind {
	case "overview":
		return max(tick, chartRefreshes)
	case "nodes":
		return max(tick, time.Second)
	}
	return tick
}

// parseLiveView reads the view a page asked for: view=<kind> and the page's
// own filter parameters.
func parseLiveView(q url.Values, operate bool) (liveView, error) {
	v := liveView{kind: q.Get("view"), operate: operate}
	role := "v"
	if operate {
		role = "o"
	}
	switch v.kind {
	case "overview":
		r, err := parseChartRange(q.Get("range"))
		if err != nil {
			return v, err
		}
		v.chart, v.key, v.back = r, "overview|"+r.name, "/"
	case "nodes":
		v.key, v.back = "nodes", "/nodes"
	case "schedules":
		v.key, v.back = "schedules|"+role, "/schedules"
	case "tasks":
		p, err := tasksParams(q)
		if err != nil {
			return v, err
		}
		v.tasks = p
		v.back = withQuery("/tasks", "state", string(p.State), "queue", p.Queue, "group", p.Group, "chain", p.Chain,
			"schedule", p.Schedule, "before", beforeParam(p.Before))
		v.key = "tasks|" + role + "|" + v.back
	case "logs":
		lq, err := logsParams(q)
		if err != nil {
			return v, err
		}
		v.logs = lq
		v.key = "logs|" + liveQuery(logsQuery(lq), lq.Before)
	case "task":
		id, err := strconv.ParseInt(q.Get("id"), 10, 64)
		if err != nil || id < 1 {
			return v, &queue.ValidationError{Field: "id", Reason: fmt.Sprintf("%q is not a task id", q.Get("id"))}
		}
		v.taskID, v.back = id, taskURL(id)
		v.key = "task|" + role + "|" + strconv.FormatInt(id, 10)
	default:
		return v, &queue.ValidationError{Field: "view", Reason: fmt.Sprintf("%q is not one of overview, tasks, task, logs, nodes, schedules", v.kind)}
	}
	return v, nil
}

func beforeParam(b int64) string {
	if b == 0 {
		return ""
	}
	return strconv.FormatInt(b, 10)
}

// viewState is a view's rendered content at one tick: table rows by id in
// order, and whole sections (chart, task summary, nodes) by name.
type viewState struct {
	order    []string
	rows     map[string]string
	sections map[string]string
}

// shared is what every view's tick reads once: the queues and the nodes.
type shared struct {
	queues []queue.Queue
	nodes  []clusterNode
}

// liveRowPage is the frame live rows are rendered with: no CSRF token, which
// the page's script fills in from its own meta tag.
var liveRowPage = templates.Page{CSRFField: auth.CSRFField}

// loadView runs the view's queries and renders what it shows.
func (u *views) loadView(ctx context.Context, v liveView, sh shared) (viewState, error) {
	st := viewState{rows: map[string]string{}, sections: map[string]string{}}
	now := u.now()
	add := func(id int64, comp templ.Component) error {
		html, err := renderString(comp)
		k := strconv.FormatInt(id, 10)
		st.order = append(st.order, k)
		st.rows[k] = html
		return err
	}
	section := func(name string, comp templ.Component) error {
		html, err := renderString(comp)
		st.sections[name] = html
		return err
	}
	switch v.kind {
	case "overview":
		ov := u.overviewView(ctx, v.chart, sh.queues, sh.nodes)
		if err := section("chart", templates.ChartSVG(ov.Chart)); err != nil {
			return st, err
		}
		for _, q := range ov.Queues {
			if err := section("spark:"+q.Name, templates.SparkSVG(q.Spark)); err != nil {
				return st, err
			}
		}
	case "tasks":
		list, _, err := listOrSearch(ctx, u.store, v.tasks)
		if err != nil {
			return st, err
		}
		for _, t := range list {
			if err := add(t.ID, templates.TaskRowView(liveRowPage, taskRow(t, now, v.operate, v.back))); err != nil {
				return st, err
			}
		}
	case "logs":
		rows, err := u.store.Attempts(ctx, v.logs)
		if err != nil {
			return st, err
		}
		for _, r := range rows {
			if err := add(r.ID, templates.AttemptRowView(attemptRow(r, now), true)); err != nil {
				return st, err
			}
		}
	case "task":
		tv, err := u.taskView(ctx, v.taskID, v.operate)
		if err != nil {
			return st, err
		}
		tv.Page = liveRowPage
		if err := section("task", templates.TaskSummary(tv)); err != nil {
			return st, err
		}
		if err := section("attempts", templates.AttemptTable(tv.Attempts, false)); err != nil {
			return st, err
		}
	case "nodes":
		if err := section("nodes", templates.NodeList(u.nodeViewsOf(sh.nodes))); err != nil {
			return st, err
		}
	case "schedules":
		rows, err := u.scheduleRows(ctx, v.operate)
		if err != nil {
			return st, err
		}
		for _, r := range rows {
			if err := add(r.ID, templates.ScheduleRowView(liveRowPage, r)); err != nil {
				return st, err
			}
		}
	}
	return st, nil
}
