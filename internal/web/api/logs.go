package api

import (
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/labstack/echo/v4"

	"readpast/internal/logs"
	"readpast/internal/ops"
	"readpast/internal/queue"
	"readpast/internal/web/request"
)

// LogPage is one page of GET /api/logs.
type LogPage struct {
	Logs       []logs.Row `json:"logs"`
	NextCursor *int64     `json:"next_cursor"`
}

// listLogs is GET /api/logs?task=&queue=&outcome=&since=&until=&cursor=&limit=&format=.
// Without format, or with format=json and a limit, it answers one page,
// newest first. format=ndjson, or format=json without a limit, streams every
// matching row (logs.Export: constant memory, whatever the size).
func (h *Handler) listLogs(c echo.Context) error {
	q, err := queryParams(c, "task", "queue", "outcome", "since", "until", "cursor", "limit", "format")
	if err != nil {
		return err
	}
	lq, err := logQuery(q, time.Now())
	if err != nil {
		return err
	}
	format := logs.Format(q.Get("format"))
	switch {
	case format != "" && format != logs.JSON && format != logs.NDJSON:
		return &queue.ValidationError{Field: "format", Reason: fmt.Sprintf("%q is not json or ndjson", format)}
	case format == logs.NDJSON && q.Get("limit") != "":
		return &queue.ValidationError{Field: "limit", Reason: "is not used with format=ndjson, which streams every matching row"}
	case format == logs.NDJSON || (format == logs.JSON && q.Get("limit") == ""):
		return h.exportLogs(c, lq, format)
	}
	if lq.Limit, err = queue.CheckLogQuery(lq); err != nil {
		return err
	}
	limit := lq.Limit // one row more, as in listTasks: next_cursor is exact
	if lq.Limit < 10000 {
		lq.Limit++
	}
	ctx, cancel := ops.Bound(c.Request().Context())
	defer cancel()
	recs, err := h.d.Store.Attempts(ctx, lq)
	if err != nil {
		return err
	}
	more := len(recs) > limit || len(recs) == lq.Limit
	recs = recs[:min(len(recs), limit)]
	out := LogPage{Logs: make([]logs.Row, len(recs))}
	for i, r := range recs {
		out.Logs[i] = logs.FromRecord(r)
	}
	if more {
		next := recs[len(recs)-1].ID
		out.NextCursor = &next
	}
	return WriteJSON(c, http.StatusOK, out)
}

// exportLogs streams the whole matching log as a download.
func (h *Handler) exportLogs(c echo.Context, lq queue.LogQuery, f logs.Format) error {
	if _, err := queue.CheckLogQuery(lq); err != nil {
		return err
	}
	ct, ext := echo.MIMEApplicationJSON, "json"
	if f == logs.NDJSON {
		ct, ext = "application/x-ndjson", "ndjson"
	}
	hdr := c.Response().Header()
	hdr.Set(echo.HeaderContentType, ct)
	hdr.Set(echo.HeaderContentDisposition, fmt.Sprintf(`attachment; filename="readpast-log.%s"`, ext))
	c.Response().WriteHeader(http.StatusOK)
	n, err := logs.Export(c.Request().Context(), c.Response(), h.d.Store, lq, f)
	if err != nil {
		// The status is sent: the client sees a truncated document.
		h.log.Warn("log export stopped", "rows", n, "err", err)
	}
	return nil
}

// logQuery parses the filters shared by pages and exports.
func logQuery(q url.Values, now time.Time) (queue.LogQuery, error) {
	var lq queue.LogQuery
	var err error
	if lq.TaskID, err = intParam(q, "task", 1); err != nil {
		return lq, err
	}
	if lq.Before, err = intParam(q, "cursor", 1); err != nil {
		return lq, err
	}
	limit, err := intParam(q, "limit", 1)
	if err != nil {
		return lq, err
	}
	lq.Limit = int(min(limit, 1<<20))
	lq.Queue, lq.Outcome = q.Get("queue"), queue.Outcome(q.Get("outcome"))
	if lq.Since, err = request.TimeParam(q, "since", now); err != nil {
		return lq, err
	}
	if lq.Until, err = request.TimeParam(q, "until", now); err != nil {
		return lq, err
	}
	return lq, nil
}
