package api

import (
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"readpast/internal/ops"
	"readpast/internal/queue"
)

// AuditPage is one page of GET /api/audit.
type AuditPage struct {
	Audit      []ops.AuditRow `json:"audit"`
	NextCursor *int64         `json:"next_cursor"`
}

// listAudit is GET /api/audit?limit=&cursor=&format=: who changed what,
// newest first, one keyset page (viewer). format=ndjson, or format=json
// without a limit, streams every row from the cursor on as a download, as
// GET /api/logs does.
func (h *Handler) listAudit(c echo.Context) error {
	q, err := queryParams(c, "cursor", "limit", "format")
	if err != nil {
		return err
	}
	var aq queue.AuditQuery
	if aq.Before, err = intParam(q, "cursor", 1); err != nil {
		return err
	}
	limit, err := intParam(q, "limit", 1)
	if err != nil {
		return err
	}
	aq.Limit = int(min(limit, queue.MaxAuditPage+1))
	switch f := q.Get("format"); {
	case f != "" && f != "json" && f != "ndjson":
		return &queue.ValidationError{Field: "format", Reason: fmt.Sprintf("%q is not json or ndjson", f)}
	case f == "ndjson" && q.Get("limit") != "":
		return &queue.ValidationError{Field: "limit", Reason: "is not used with format=ndjson, which streams every row"}
	case f == "ndjson" || (f == "json" && q.Get("limit") == ""):
		return h.exportAudit(c, aq.Before, f == "ndjson")
	}
	if aq.Limit, err = queue.CheckAuditQuery(aq); err != nil {
		return err
	}
	want := aq.Limit // one row more, so next_cursor is null on the last page
	if aq.Limit < queue.MaxAuditPage {
		aq.Limit++
	}
	ctx, cancel := ops.Bound(c.Request().Context())
	defer cancel()
	recs, err := h.d.Store.Audit(ctx, aq)
	if err != nil {
		return err
	}
	more := len(recs) > want || len(recs) == aq.Limit && aq.Limit == want
	recs = recs[:min(len(recs), want)]
	out := AuditPage{Audit: make([]ops.AuditRow, len(recs))}
	for i, r := range recs {
		out.Audit[i] = ops.AuditRowOf(r)
	}
	if more && len(recs) > 0 {
		next := recs[len(recs)-1].ID
		out.NextCursor = &next
	}
	return WriteJSON(c, http.StatusOK, out)
}

// exportAudit streams the audit log from before on as a download.
func (h *Handler) exportAudit(c echo.Context, before int64, ndjson bool) error {
	ct, ext := echo.MIMEApplicationJSON, "json"
	if ndjson {
		ct, ext = "application/x-ndjson", "ndjson"
	}
	hdr := c.Response().Header()
	hdr.Set(echo.HeaderContentType, ct)
	hdr.Set(echo.HeaderContentDisposition, fmt.Sprintf(`attachment; filename="readpast-audit.%s"`, ext))
	c.Response().WriteHeader(http.StatusOK)
	if n, err := ops.ExportAudit(c.Request().Context(), c.Response(), h.d.Store, before, ndjson); err != nil {
		// The status is sent: the client sees a truncated document.
		h.log.Warn("audit export stopped", "rows", n, "err", err)
	}
	return nil
}
