package logs

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"

	"readpast/internal/queue"
)

// Format is an export format.
type Format string

// The export formats.
const (
	JSON   Format = "json"   // one JSON array
	NDJSON Format = "ndjson" // one JSON object per line
)

// exportPage is how many rows one store query reads; memory stays at one page
// whatever the export's size.
const exportPage = 1000

// Export writes every log row matching q (newest first) to w, reading the store
// one keyset page at a time, so memory does not grow with the number of rows.
// q.Limit is ignored; q.Before may start the export below a row id.
func Export(ctx context.Context, w io.Writer, s queue.LogStore, q queue.LogQuery, f Format) (int64, error) {
	if f != JSON && f != NDJSON {
		return 0, &queue.ValidationError{Field: "format", Reason: fmt.Sprintf("%q is not json or ndjson", f)}
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	var n int64
	if f == JSON {
		bw.WriteString("[")
	}
	// The export of one task's log carries the result output its attempts
	// kept: one read of the task's rows, whatever the log's size.
	var results map[int]*AttemptResults
	if rs, ok := s.(queue.ResultStore); ok && q.TaskID != 0 {
		all, err := TaskResults(ctx, rs, q.TaskID)
		if err != nil {
			return 0, fmt.Errorf("exporting the result output of task %d: %w", q.TaskID, err)
		}
		results = make(map[int]*AttemptResults, len(all))
		for i := range all {
			results[all[i].Attempt] = &all[i]
		}
	}
	q.Limit = exportPage
	for {
		page, err := s.Attempts(ctx, q)
		if err != nil {
			return n, fmt.Errorf("exporting the execution log after %d rows: %w", n, err)
		}
		for _, r := range page {
			if f == JSON && n > 0 {
				bw.WriteString(",")
			}
			row := FromRecord(r)
			row.Results = results[r.Attempt]
			if err := enc.Encode(row); err != nil {
				return n, fmt.Errorf("writing row %d: %w", r.ID, err)
			}
			n++
		}
		if len(page) < exportPage {
			break
		}
		q.Before = page[len(page)-1].ID
		if err := bw.Flush(); err != nil {
			return n, fmt.Errorf("writing the export: %w", err)
		}
	}
	if f == JSON {
		bw.WriteString("]\n")
	}
	if err := bw.Flush(); err != nil {
		return n, fmt.Errorf("writing the export: %w", err)
	}
	return n, nil
}
