// Package logs serves the execution log (SPEC §6): its JSON shape, streamed
// JSON and NDJSON export in constant memory, and the retention purge.
package logs

import (
	"time"

	"readpast/internal/queue"
)

// Row is one attempt in the API's snake_case JSON. Absent values are null,
// never "" (docs/API.md): no session id (SQLite), no error (a success), no
// messages, rows affected unknown.
type Row struct {
	ID           int64      `json:"id"`
	TaskID       int64      `json:"task_id"`
	Attempt      int        `json:"attempt"`
	Queue        string     `json:"queue"`
	Node         *string    `json:"node"`
	Worker       *string    `json:"worker"`
	SessionID    *string    `json:"session_id"`
	StartedAt    *time.Time `json:"started_at"`
	FinishedAt   time.Time  `json:"finished_at"`
	DurationMS   int64      `json:"duration_ms"`
	Outcome      string     `json:"outcome"`
	Error        *string    `json:"error"`
	RowsAffected *int64     `json:"rows_affected"`
	Messages     *string    `json:"messages"`
	// Results is the result output the attempt kept: only in the export of
	// one task's log (Export with a TaskID), absent elsewhere.
	Results *AttemptResults `json:"results,omitempty"`
}

// FromRecord converts a store record to its JSON row.
func FromRecord(r queue.AttemptRecord) Row {
	row := Row{ID: r.ID, TaskID: r.TaskID, Attempt: r.Attempt, Queue: r.Queue, Node: orNull(r.Node), Worker: orNull(r.Worker),
		SessionID: orNull(r.SessionID), FinishedAt: r.FinishedAt.UTC(), DurationMS: r.Duration.Milliseconds(),
		Outcome: string(r.Outcome), Error: orNull(r.Error), Messages: orNull(r.Messages)}
	if !r.StartedAt.IsZero() {
		started := r.StartedAt.UTC()
		row.StartedAt = &started
	}
	if r.RowsAffected >= 0 {
		n := r.RowsAffected
		row.RowsAffected = &n
	}
	return row
}

// orNull is s, or nil (JSON null) when s is empty.
func orNull(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
