package ui

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"readpast/internal/ops"
	"readpast/internal/queue"
	"readpast/web/templates"
)

// auditPageSize is one screen of the audit page.
const auditPageSize = 100

// audit is the audit page (viewer): every change an operator made, newest
// first, a keyset page at a time (?before=id), with the whole log's export.
func (u *Pages) audit(c echo.Context) error {
	var before int64
	if b := strings.TrimSpace(c.QueryParam("before")); b != "" {
		n, err := strconv.ParseInt(b, 10, 64)
		if err != nil || n < 1 {
			return &queue.ValidationError{Field: "before", Reason: strconv.Quote(b) + " is not an id: follow the page's Older link"}
		}
		before = n
	}
	ctx, cancel := ops.Bound(c.Request().Context())
	defer cancel()
	recs, err := u.store.Audit(ctx, queue.AuditQuery{Before: before, Limit: auditPageSize})
	if err != nil {
		return err
	}
	v := templates.Audit{Page: u.page(c, "audit", "Audit", templates.Live{}, nil),
		ExportJSON: "/audit/export?format=json", ExportLines: "/audit/export?format=ndjson"}
	now := u.now()
	for _, r := range recs {
		url := objectURL(r.Target)
		v.Rows = append(v.Rows, templates.AuditRow{ID: r.ID, At: showTime(r.At, now), Actor: r.Actor, Action: r.Action,
			Object: r.Target, ObjectURL: url, Detail: r.Detail})
	}
	var last int64
	if len(recs) > 0 {
		last = recs[len(recs)-1].ID
	}
	v.Newest, v.Older = pages("/audit", "", before, len(recs), auditPageSize, last)
	return render(c, http.StatusOK, templates.AuditPage(v))
}

// objectURL is the page of an audited object ("task 42", "schedule s",
// "queue q", "group g"), or "" for one without a page.
func objectURL(target string) string {
	kind, name, ok := strings.Cut(target, " ")
	if !ok || name == "" {
		return ""
	}
	switch kind {
	case "task":
		if id, err := strconv.ParseInt(name, 10, 64); err == nil && id > 0 {
			return taskURL(id)
		}
	case "schedule":
		return scheduleAnchor(name)
	case "queue":
		return withQuery("/tasks", "queue", name)
	case "group":
		return withQuery("/tasks", "group", name)
	}
	return ""
}

// exportAudit downloads the whole audit log as JSON or NDJSON, streamed one
// store page at a time.
func (u *Pages) exportAudit(c echo.Context) error {
	f := c.QueryParam("format")
	if f == "" {
		f = "json"
	}
	if f != "json" && f != "ndjson" {
		return &queue.ValidationError{Field: "format", Reason: strconv.Quote(f) + " is not json or ndjson"}
	}
	h := c.Response().Header()
	ct := "application/json"
	if f == "ndjson" {
		ct = "application/x-ndjson"
	}
	h.Set(echo.HeaderContentType, ct)
	h.Set(echo.HeaderContentDisposition, `attachment; filename="readpast-audit.`+f+`"`)
	h.Set("Cache-Control", "no-store")
	c.Response().WriteHeader(http.StatusOK)
	if _, err := ops.ExportAudit(c.Request().Context(), c.Response(), u.store, 0, f == "ndjson"); err != nil {
		u.log.Warn("exporting the audit log", "err", err)
	}
	return nil
}
