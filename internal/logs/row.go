// Package logs serves the execution log (SPEC §6): its JSON shape, streamed
// JSON and NDJSON export in constant memory, and the retention purge.
package logs

import (
	"time"

	"readpast/internal/queue"
)

// Row is one attempt in the API's snake_case JSON.
type Row struct {
	ID           int64     `json:"id"`
	TaskID       int64     `json:"task_id"`
	Attempt      int       `json:"attempt"`
	Queue        string    `json:"queue"`
	Node         string    `json:"node"`
	Worker       string    `json:"worker"`
	SessionID    string    `json:"session_id"`
	StartedAt    time.Time `json:"started_at"`
	FinishedAt   time.Time `json:"finished_at"`
	DurationMS   int64     `json:"duration_ms"`
	Outcome      string    `json:"outcome"`
	Error        string    `json:"error"`
	RowsAffected int64     `json:"rows_affected"`
	Messages     string    `json:"messages"`
}

// FromRecord converts a store record to its JSON row.
func FromRecord(r queue.AttemptRecord) Row {
	return Row{ID: r.ID, TaskID: r.TaskID, Attempt: r.Attempt, Queue: r.Queue, Node: r.Node, Worker: r.Worker,
		SessionID: r.SessionID, StartedAt: r.StartedAt.UTC(), FinishedAt: r.FinishedAt.UTC(),
		DurationMS: r.Duration.Milliseconds(), Outcome: string(r.Outcome), Error: r.Error,
		RowsAffected: r.RowsAffected, Messages: r.Messages}
}
