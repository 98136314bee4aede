package sqlserver

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math"
	"time"

	"readpast/internal/queue"
)

// maxDelay is the longest delay: the batch adds it with DATEADD(second, …),
// which takes an int.
const maxDelay = time.Duration(math.MaxInt32) * time.Second

// jsonTask is one element of the enqueue batch's @tasks array. Optional fields
// are omitted, so OPENJSON reads them as NULL; booleans are 0/1 for bit.
type jsonTask struct {
	Queue             string  `json:"queue"`
	Body              string  `json:"body"`
	Priority          int     `json:"priority"`
	AvailableAt       *string `json:"available_at,omitempty"`
	DelaySeconds      int64   `json:"delay_s"`
	DelayMicros       int64   `json:"delay_us"`
	Group             string  `json:"group,omitempty"`
	Chain             string  `json:"chain,omitempty"`
	Stage             int     `json:"stage"`
	MaxAttempts       int     `json:"max_attempts"`
	TimeoutMillis     int64   `json:"timeout_ms"`
	Transactional     int     `json:"transactional"`
	ContinueOnFailure int     `json:"continue_on_failure"`
	CreatedBy         string  `json:"created_by"`
	UniqueKey         string  `json:"unique_key,omitempty"`
	Target            string  `json:"target,omitempty"`
	RetryIntervalMS   *int64  `json:"retry_interval_ms,omitempty"`
	RetryCapMS        *int64  `json:"retry_cap_ms,omitempty"`
	Name              string  `json:"name,omitempty"`
}

// Enqueue writes every task in one round trip (see enqueueBatch) and says,
// in input order, what became of each.
func (s *Store) Enqueue(ctx context.Context, tasks []queue.NewTask) ([]queue.Enqueued, error) {
	args, err := enqueueArgs(tasks)
	if err != nil {
		return nil, err
	}
	var out []queue.Enqueued
	err = retryConflicts(ctx, func() error {
		out = out[:0]
		return s.write(ctx, func(ctx context.Context, c *sql.Conn) error {
			rows, err := c.QueryContext(ctx, enqueueBatch.text, args...)
			if err != nil {
				return err
			}
			for rows.Next() {
				var e queue.Enqueued
				if err := rows.Scan(&e.ID, &e.Duplicate); err != nil {
					_ = rows.Close()
					return err
				}
				out = append(out, e)
			}
			return closeRows(rows)
		})
	})
	if err != nil {
		return nil, wrap(fmt.Sprintf("enqueueing %d tasks", len(tasks)), err)
	}
	if len(out) != len(tasks) {
		return nil, fmt.Errorf("sqlserver: enqueueing %d tasks: the batch returned %d rows", len(tasks), len(out))
	}
	return out, nil
}

// enqueueArgs encodes normalized tasks as the enqueue batch's @tasks JSON. It
// also rejects the few values that pass queue.Normalize but do not fit SQL
// Server: times outside datetime2's years 1-9999 and delays past DATEADD's int.
func enqueueArgs(tasks []queue.NewTask) ([]any, error) {
	list := make([]jsonTask, len(tasks))
	for i, t := range tasks {
		field := func(name string) string {
			if len(tasks) > 1 {
				return fmt.Sprintf("tasks[%d].%s", i, name)
			}
			return name
		}
		j := jsonTask{
			Queue:         t.Queue,
			Body:          t.Body,
			Priority:      *t.Priority,
			Group:         t.Group,
			Chain:         t.Chain,
			Stage:         t.Stage,
			MaxAttempts:   t.MaxAttempts,
			TimeoutMillis: t.Timeout.Milliseconds(),
			Transactional: bit(t.Transactional),
			CreatedBy:     t.CreatedBy,
			UniqueKey:     t.UniqueKey,
			Target:        t.Target,
			Name:          t.Name,
		}
		j.RetryIntervalMS, j.RetryCapMS = queue.RetryMillis(t.Retry)
		if t.ContinueOnFailure {
			j.ContinueOnFailure = 1
		}
		switch {
		case !t.AvailableAt.IsZero():
			at := t.AvailableAt.UTC()
			if at.Year() < 1 || at.Year() > 9999 {
				return nil, &queue.ValidationError{Field: field("available_at"), Reason: "is outside the years 1 to 9999"}
			}
			v := at.Format("2006-01-02T15:04:05.999999")
			j.AvailableAt = &v
		case t.Delay > maxDelay:
			return nil, &queue.ValidationError{Field: field("delay"), Reason: fmt.Sprintf("is %s, over the limit of %s", t.Delay, maxDelay)}
		default:
			j.DelaySeconds = int64(t.Delay / time.Second)
			j.DelayMicros = int64(t.Delay%time.Second) / int64(time.Microsecond)
		}
		list[i] = j
	}
	doc, err := json.Marshal(list)
	if err != nil {
		return nil, fmt.Errorf("sqlserver: encoding tasks: %w", err)
	}
	return []any{sql.Named("tasks", maxText(string(doc)))}, nil
}
