package ops

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"readpast/internal/queue"
)

// AuditRow is one audited change as the API, the audit page's export and
// the NDJSON stream write it: who did what to which object, when.
type AuditRow struct {
	ID     int64     `json:"id"`
	At     time.Time `json:"at"`
	Actor  string    `json:"actor"`
	Action string    `json:"action"`
	Object string    `json:"object"`
	Detail *string   `json:"detail"` // null when the action says it all
}

// AuditRowOf is r as the API writes it.
func AuditRowOf(r queue.AuditRecord) AuditRow {
	row := AuditRow{ID: r.ID, At: r.At.UTC(), Actor: r.Actor, Action: r.Action, Object: r.Target}
	if r.Detail != "" {
		d := r.Detail
		row.Detail = &d
	}
	return row
}

// auditExportPage is how many rows one store read of an export takes; memory
// stays at one page whatever the log's length.
const auditExportPage = queue.MaxAuditPage

// ExportAudit writes every audit row below before (all when 0), newest first,
// to w: a JSON array, or one JSON object per line (ndjson). It reads the store
// one keyset page at a time, and returns how many rows it wrote.
func ExportAudit(ctx context.Context, w io.Writer, s queue.AuditStore, before int64, ndjson bool) (int64, error) {
	bw := bufio.NewWriterSize(w, 64<<10)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	var n int64
	if !ndjson {
		bw.WriteString("[")
	}
	q := queue.AuditQuery{Before: before, Limit: auditExportPage}
	for {
		page, err := s.Audit(ctx, q)
		if err != nil {
			return n, fmt.Errorf("exporting the audit log after %d rows: %w", n, err)
		}
		for _, r := range page {
			if !ndjson && n > 0 {
				bw.WriteString(",")
			}
			if err := enc.Encode(AuditRowOf(r)); err != nil {
				return n, fmt.Errorf("writing audit row %d: %w", r.ID, err)
			}
			n++
		}
		if len(page) < q.Limit {
			break
		}
		q.Before = page[len(page)-1].ID
		if err := bw.Flush(); err != nil {
			return n, fmt.Errorf("writing the audit export: %w", err)
		}
	}
	if !ndjson {
		bw.WriteString("]\n")
	}
	if err := bw.Flush(); err != nil {
		return n, fmt.Errorf("writing the audit export: %w", err)
	}
	return n, nil
}
