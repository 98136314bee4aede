package ui

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"readpast/internal/logs"
	"readpast/internal/ops"
	"readpast/internal/queue"
	"readpast/internal/web/request"
	"readpast/web/templates"
)

// logs is the execution log, newest first, filtered by queue, outcome and
// task; the websocket adds new rows at the top.
func (u *Pages) logs(c echo.Context) error {
	ctx, cancel := ops.Bound(c.Request().Context())
	defer cancel()
	qs, err := u.store.Queues(ctx)
	if err != nil {
		return err
	}
	q, err := logsParams(c.QueryParams())
	var rows []queue.AttemptRecord
	if err == nil {
		rows, err = u.store.Attempts(ctx, q)
	}
	filter := logsQuery(q)
	status, live := http.StatusOK, templates.Live{View: "logs", Query: liveQuery(filter, q.Before)}
	v := templates.Logs{Filter: templates.LogFilter{Queue: q.Queue, Outcome: string(q.Outcome)},
		ExportJSON: exportURL(filter, logs.JSON), ExportLines: exportURL(filter, logs.NDJSON)}
	if q.TaskID > 0 {
		v.Filter.Task = strconv.FormatInt(q.TaskID, 10)
	}
	v.Filter.Since, v.Filter.Until = dateField(q.Since), dateField(q.Until)
	if err != nil {
		if !queue.IsValidation(err) {
			return err
		}
		v.Error, status, live = err.Error(), http.StatusBadRequest, templates.Live{}
	}
	for _, o := range queue.Outcomes {
		v.Filter.Outcomes = append(v.Filter.Outcomes, string(o))
	}
	for _, q := range qs {
		v.Filter.Queues = append(v.Filter.Queues, q.Name)
	}
	v.Page = u.page(c, "logs", "Execution log", live, qs)
	now := u.now()
	for _, r := range rows {
		v.Rows = append(v.Rows, attemptRow(r, now))
	}
	var last int64
	if len(rows) > 0 {
		last = rows[len(rows)-1].ID
	}
	v.Newest, v.Older = pages("/logs", filter, q.Before, len(rows), logsPageSize, last)
	return render(c, status, templates.LogsPage(v))
}

// logsParams reads the log filter (queue, outcome, task, since, until,
// before). since and until take what the API's do (request.TimeParam).
func logsParams(v url.Values) (queue.LogQuery, error) {
	q := queue.LogQuery{Queue: strings.TrimSpace(v.Get("queue")), Outcome: queue.Outcome(strings.TrimSpace(v.Get("outcome"))), Limit: logsPageSize}
	now := time.Now()
	for _, f := range []struct {
		name string
		dst  *time.Time
	}{{"since", &q.Since}, {"until", &q.Until}} {
		t, err := request.TimeParam(url.Values{f.name: {strings.TrimSpace(v.Get(f.name))}}, f.name, now)
		if err != nil {
			return q, err
		}
		*f.dst = t
	}
	if !q.Since.IsZero() && !q.Until.IsZero() && !q.Until.After(q.Since) {
		return q, &queue.ValidationError{Field: "until", Reason: "is not after since: give a range that ends after it starts"}
	}
	for _, f := range []struct {
		name string
		dst  *int64
	}{{"task", &q.TaskID}, {"before", &q.Before}} {
		s := strings.TrimSpace(v.Get(f.name))
		if s == "" {
			continue
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 1 {
			return q, &queue.ValidationError{Field: f.name, Reason: fmt.Sprintf("%q is not an id", s)}
		}
		*f.dst = n
	}
	if _, err := queue.CheckLogQuery(q); err != nil {
		return q, err
	}
	return q, nil
}

// logsQuery is the filter as a query string (without the page cursor).
func logsQuery(q queue.LogQuery) string {
	task := ""
	if q.TaskID > 0 {
		task = strconv.FormatInt(q.TaskID, 10)
	}
	return strings.TrimPrefix(withQuery("", "queue", q.Queue, "outcome", string(q.Outcome), "task", task,
		"since", instant(q.Since), "until", instant(q.Until)), "?")
}

// instant writes a filter's time for a URL: RFC 3339 in UTC, "" for none.
func instant(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// dateField is a time as a datetime-local field holds it, in UTC (the page's
// script shows it in the browser's zone when asked).
func dateField(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02T15:04")
}

func exportURL(filter string, f logs.Format) string {
	if filter == "" {
		return "/logs/export?format=" + string(f)
	}
	return "/logs/export?" + filter + "&format=" + string(f)
}

// exportLogs downloads every log row matching the page's filter as JSON or
// NDJSON, streamed one store page at a time.
func (u *Pages) exportLogs(c echo.Context) error {
	q, err := logsParams(c.QueryParams())
	if err != nil {
		return err
	}
	q.Before = 0
	f := logs.Format(c.QueryParam("format"))
	if f == "" {
		f = logs.JSON
	}
	if f != logs.JSON && f != logs.NDJSON {
		return &queue.ValidationError{Field: "format", Reason: fmt.Sprintf("%q is not json or ndjson", f)}
	}
	h := c.Response().Header()
	ct := "application/json"
	if f == logs.NDJSON {
		ct = "application/x-ndjson"
	}
	h.Set(echo.HeaderContentType, ct)
	h.Set(echo.HeaderContentDisposition, fmt.Sprintf(`attachment; filename="readpast-log.%s"`, f))
	h.Set("Cache-Control", "no-store")
	c.Response().WriteHeader(http.StatusOK)
	if _, err := logs.Export(c.Request().Context(), c.Response(), u.store, q, f); err != nil {
		u.log.Warn("exporting the execution log", "err", err)
	}
	return nil
}
