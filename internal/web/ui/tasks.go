package ui

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"readpast/internal/ops"
	"readpast/internal/queue"
	"readpast/web/templates"
)

// tasks lists tasks newest first, filtered by state, queue, group, chain and schedule,
// one keyset page at a time (?before=<id>).
func (u *Pages) tasks(c echo.Context) error {
	ctx, cancel := ops.Bound(c.Request().Context())
	defer cancel()
	qs, err := u.store.Queues(ctx)
	if err != nil {
		return err
	}
	p, err := tasksParams(c.QueryParams())
	var (
		list      []*queue.Task
		scannedTo int64
	)
	if err == nil {
		list, scannedTo, err = listOrSearch(ctx, u.store, p)
	}
	status, live := http.StatusOK, templates.Live{View: "tasks", Query: liveQuery(tasksQuery(p), p.Before)}
	v := templates.Tasks{Filter: templates.TaskFilter{State: string(p.State), Queue: p.Queue, Group: p.Group, Chain: p.Chain,
		Schedule: p.Schedule, Text: p.Text}}
	if err != nil {
		if !queue.IsValidation(err) {
			return err
		}
		v.Error, status, live = err.Error(), http.StatusBadRequest, templates.Live{}
	}
	for _, st := range queue.States {
		v.Filter.States = append(v.Filter.States, string(st))
	}
	for _, q := range qs {
		v.Filter.Queues = append(v.Filter.Queues, q.Name)
	}
	v.Page = u.page(c, "tasks", "Tasks", live, qs)
	back, now := c.Request().URL.RequestURI(), u.now()
	for _, t := range list {
		v.Rows = append(v.Rows, taskRow(t, now, v.CanOperate, back))
	}
	if err == nil && len(list) > 0 {
		if v.Bulk, err = u.bulkLinks(c, p); err != nil {
			return err
		}
		v.Pick = v.CanOperate
	}
	v.Newest, v.Older = pages("/tasks", tasksQuery(p), p.Before, len(list), tasksPageSize, lastTaskID(list))
	if p.Text != "" && len(list) < tasksPageSize && scannedTo > 0 {
		// The search's window ended before the page filled: older tasks
		// are searched from where it stopped.
		_, v.Older = pages("/tasks", tasksQuery(p), p.Before, tasksPageSize, tasksPageSize, scannedTo)
		v.Older.Label = "Search older →"
	}
	return render(c, status, templates.TasksPage(v))
}

// liveQuery is a page's filter plus its cursor: what the websocket view repeats.
func liveQuery(filter string, before int64) string {
	if before == 0 {
		return filter
	}
	if filter == "" {
		return "before=" + strconv.FormatInt(before, 10)
	}
	return filter + "&before=" + strconv.FormatInt(before, 10)
}

// tasksParams reads the filter; an unknown state is refused with a message.
func tasksParams(q url.Values) (queue.ListParams, error) {
	p := queue.ListParams{State: queue.State(strings.TrimSpace(q.Get("state"))), Queue: strings.TrimSpace(q.Get("queue")),
		Group: strings.TrimSpace(q.Get("group")), Chain: strings.TrimSpace(q.Get("chain")),
		Schedule: strings.TrimSpace(q.Get("schedule")), Text: strings.TrimSpace(q.Get("text")), Limit: tasksPageSize}
	if p.State != "" && !p.State.Valid() {
		return p, &queue.ValidationError{Field: "state", Reason: strconv.Quote(string(p.State)) + " is not one of pending, running, succeeded, failed, cancelled"}
	}
	if b := q.Get("before"); b != "" {
		n, err := strconv.ParseInt(b, 10, 64)
		if err != nil || n < 1 {
			return p, &queue.ValidationError{Field: "before", Reason: strconv.Quote(b) + " is not a task id"}
		}
		p.Before = n
	}
	_, err := queue.CheckList(p)
	return p, err
}

// tasksQuery is the filter as a query string (without the page cursor).
func tasksQuery(p queue.ListParams) string {
	return strings.TrimPrefix(withQuery("", "state", string(p.State), "queue", p.Queue, "group", p.Group, "chain", p.Chain,
		"schedule", p.Schedule, "text", p.Text), "?")
}

// listOrSearch is one page of the tasks list, or, with a text, of a text
// search (queue.BulkStore.Search: the window of the filter's newest tasks
// it read ended at scannedTo; 0 when it reached the oldest).
func listOrSearch(ctx context.Context, s queue.Store, p queue.ListParams) (list []*queue.Task, scannedTo int64, err error) {
	if p.Text != "" {
		return s.Search(ctx, p, queue.SearchWindow)
	}
	list, err = s.List(ctx, p)
	return list, 0, err
}

func lastTaskID(list []*queue.Task) int64 {
	if len(list) == 0 {
		return 0
	}
	return list[len(list)-1].ID
}

// pages builds the keyset links: back to the newest rows, and on to older ones
// when this page was full.
func pages(path, query string, before int64, n, size int, last int64) (newest, older *templates.Link) {
	join := func(extra string) string {
		switch {
		case query == "" && extra == "":
			return path
		case query == "":
			return path + "?" + extra
		case extra == "":
			return path + "?" + query
		}
		return path + "?" + query + "&" + extra
	}
	if before > 0 {
		newest = &templates.Link{Label: "← Newest", URL: join("")}
	}
	if n == size && last > 0 {
		older = &templates.Link{Label: "Older →", URL: join("before=" + strconv.FormatInt(last, 10))}
	}
	return newest, older
}
