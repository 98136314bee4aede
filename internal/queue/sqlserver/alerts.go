package sqlserver

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sort"
	"time"

	"readpast/internal/queue"
)

// ClaimAlertEvents implements queue.AlertStore.
func (s *Store) ClaimAlertEvents(ctx context.Context, node string, limit int, lease time.Duration) ([]queue.AlertEvent, error) {
	var out []queue.AlertEvent
	err := retryDeadlock(ctx, func() error {
		out = out[:0]
		return s.write(ctx, func(ctx context.Context, c *sql.Conn) error {
			rows, err := c.QueryContext(ctx, claimAlertEventsBatch.text, leaseArgs(node, limit, lease)...)
			if err != nil {
				return err
			}
			for rows.Next() {
				var e queue.AlertEvent
				var outcome string
				var schedule, job sql.NullString
				if err := rows.Scan(&e.ID, &e.At, &e.Kind, &e.TaskID, &e.Queue, &schedule, &e.Target, &job, &outcome, &e.Attempts, &e.Error); err != nil {
					_ = rows.Close()
					return err
				}
				e.At, e.Outcome, e.Schedule, e.Job = e.At.UTC(), queue.Outcome(outcome), schedule.String, job.String
				out = append(out, e)
			}
			return closeRows(rows)
		})
	})
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, wrap("claiming alert events", err)
}

// leaseArgs binds a claim of alert rows.
func leaseArgs(node string, limit int, lease time.Duration) []any {
	return []any{sql.Named("node", node), sql.Named("limit", limit), sql.Named("lease_ms", int(max(1, lease.Milliseconds())))}
}

// errUnchanged rolls back a write whose condition change was made already.
var errUnchanged = errors.New("condition unchanged")

// WriteAlerts implements queue.AlertStore: one transaction over a few round
// trips (alertTxBegin), rolled back by write() on any error.
func (s *Store) WriteAlerts(ctx context.Context, w queue.AlertWrite) (bool, error) {
	err := retryConflicts(ctx, func() error {
		return s.write(ctx, func(ctx context.Context, c *sql.Conn) error {
			if _, err := c.ExecContext(ctx, alertTxBegin); err != nil {
				return err
			}
			for _, id := range w.Events {
				var n int
				if err := c.QueryRowContext(ctx, consumeAlertEventBatch.text, consumeArgs(id, w.Node)...).Scan(&n); err != nil {
					return err
				}
				if n == 0 {
					return fmt.Errorf("alert event %d: %w", id, queue.ErrLeaseLost)
				}
			}
			if cond := w.Condition; cond != nil {
				text, args := clearAlertConditionBatch.text, []any{sql.Named("key", cond.Key)}
				if cond.Firing {
					text, args = setAlertConditionBatch.text, conditionArgs(*cond)
				}
				var n int
				if err := c.QueryRowContext(ctx, text, args...).Scan(&n); err != nil {
					return err
				}
				if n == 0 {
					return errUnchanged
				}
			}
			for _, d := range w.Deliveries {
				if _, err := c.ExecContext(ctx, addAlertDeliveryBatch.text, deliveryArgs(d)...); err != nil {
					return err
				}
			}
			if w.Actor != "" {
				if _, err := c.ExecContext(ctx, alertAuditBatch.text, alertAuditArgs(w)...); err != nil {
					return err
				}
			}
			_, err := c.ExecContext(ctx, alertTxCommit)
			return err
		})
	})
	switch {
	case errors.Is(err, errUnchanged):
		return false, nil
	case errors.Is(err, queue.ErrLeaseLost):
		return false, err
	}
	return err == nil, wrap("writing alerts", err)
}

func consumeArgs(id int64, node string) []any {
	return []any{sql.Named("id", id), sql.Named("node", node)}
}

func conditionArgs(c queue.AlertConditionChange) []any {
	return []any{sql.Named("key", c.Key), sql.Named("detail", c.Detail)}
}

func deliveryArgs(d queue.NewAlertDelivery) []any {
	return []any{sql.Named("once", d.Once), sql.Named("key", d.Key), sql.Named("late_key", nullString(d.LateKey)),
		sql.Named("rule", d.Rule), sql.Named("operator", d.Operator), sql.Named("channel", d.Channel),
		sql.Named("kind", varchar(d.Kind)), sql.Named("scope", d.Scope), sql.Named("subject", d.Subject),
		sql.Named("detail", d.Detail), sql.Named("n", d.Count), sql.Named("due", datetime2(d.DueAt))}
}

func alertAuditArgs(w queue.AlertWrite) []any {
	return []any{sql.Named("actor", w.Actor), sql.Named("action", w.Action), sql.Named("target", w.AuditTarget), sql.Named("detail", w.AuditDetail)}
}

func scanAlertDeliveries(rows *sql.Rows) ([]queue.AlertDelivery, error) {
	var out []queue.AlertDelivery
	for rows.Next() {
		var d queue.AlertDelivery
		var ended sql.NullTime
		var claimedBy sql.NullString
		if err := rows.Scan(&d.ID, &d.Key, &d.Rule, &d.Operator, &d.Channel, &d.Kind, &d.Scope, &d.Subject, &d.Detail, &d.Count,
			&d.CreatedAt, &d.State, &d.NextAt, &d.Attempts, &claimedBy, &d.LastError, &ended); err != nil {
			_ = rows.Close()
			return nil, err
		}
		d.CreatedAt, d.NextAt, d.EndedAt, d.ClaimedBy = d.CreatedAt.UTC(), d.NextAt.UTC(), utc(ended), claimedBy.String
		out = append(out, d)
	}
	return out, closeRows(rows)
}

// ClaimAlertDeliveries implements queue.AlertStore.
func (s *Store) ClaimAlertDeliveries(ctx context.Context, node string, limit int, lease time.Duration) ([]queue.AlertDelivery, error) {
	var out []queue.AlertDelivery
	err := retryDeadlock(ctx, func() error {
		return s.write(ctx, func(ctx context.Context, c *sql.Conn) error {
			rows, err := c.QueryContext(ctx, claimAlertDeliveriesBatch.text, leaseArgs(node, limit, lease)...)
			if err != nil {
				return err
			}
			out, err = scanAlertDeliveries(rows)
			return err
		})
	})
	sort.Slice(out, func(i, j int) bool { return out[i].NextAt.Before(out[j].NextAt) })
	return out, wrap("claiming alert deliveries", err)
}

// EndAlertDelivery implements queue.AlertStore.
func (s *Store) EndAlertDelivery(ctx context.Context, e queue.AlertDeliveryEnd) error {
	var n int
	err := retryDeadlock(ctx, func() error {
		return s.write(ctx, func(ctx context.Context, c *sql.Conn) error {
			return c.QueryRowContext(ctx, endAlertDeliveryBatch.text, endDeliveryArgs(e)...).Scan(&n)
		})
	})
	if err != nil {
		return wrap(fmt.Sprintf("ending alert delivery %d", e.ID), err)
	}
	if n == 0 {
		return fmt.Errorf("alert delivery %d: %w", e.ID, queue.ErrLeaseLost)
	}
	return nil
}

func endDeliveryArgs(e queue.AlertDeliveryEnd) []any {
	state := queue.AlertPending
	switch {
	case e.Sent:
		state = queue.AlertSent
	case e.GiveUp:
		state = queue.AlertFailed
	}
	return []any{sql.Named("state", varchar(state)), sql.Named("retry_at", datetime2(e.RetryAt)), sql.Named("error", e.Error),
		sql.Named("id", e.ID), sql.Named("node", e.Node), sql.Named("attempt", e.Attempt)}
}

// AlertDeliveries implements queue.AlertStore.
func (s *Store) AlertDeliveries(ctx context.Context, q queue.AlertDeliveryQuery) ([]queue.AlertDelivery, error) {
	before, limit, err := queue.CheckAlertDeliveryQuery(q)
	if err != nil {
		return nil, err
	}
	rows, err := s.db.QueryContext(ctx, alertDeliveriesQuery.text, alertDeliveriesArgs(before, q.State, limit)...)
	if err != nil {
		return nil, wrap("reading alert deliveries", err)
	}
	out, err := scanAlertDeliveries(rows)
	return out, wrap("reading alert deliveries", err)
}

func alertDeliveriesArgs(before int64, state string, limit int) []any {
	return []any{sql.Named("limit", limit), sql.Named("before", before), sql.Named("state", varchar(state))}
}

// AlertConditions implements queue.AlertStore.
func (s *Store) AlertConditions(ctx context.Context) ([]queue.AlertCondition, error) {
	rows, err := s.db.QueryContext(ctx, alertConditionsQuery.text)
	if err != nil {
		return nil, wrap("reading alert conditions", err)
	}
	var out []queue.AlertCondition
	for rows.Next() {
		var c queue.AlertCondition
		if err := rows.Scan(&c.Key, &c.Since, &c.Detail); err != nil {
			_ = rows.Close()
			return nil, wrap("reading alert conditions", err)
		}
		c.Since = c.Since.UTC()
		out = append(out, c)
	}
	return out, wrap("reading alert conditions", closeRows(rows))
}

// PurgeAlerts implements queue.AlertStore.
func (s *Store) PurgeAlerts(ctx context.Context, cutoff time.Time, batch int) (int64, error) {
	var n int64
	err := retryDeadlock(ctx, func() error {
		return s.write(ctx, func(ctx context.Context, c *sql.Conn) error {
			return c.QueryRowContext(ctx, purgeAlertsBatch.text, purgeAlertsArgs(cutoff, batch)...).Scan(&n)
		})
	})
	return n, wrap("purging alerts", err)
}

func purgeAlertsArgs(cutoff time.Time, batch int) []any {
	return []any{sql.Named("batch", batch), sql.Named("cutoff", datetime2(cutoff))}
}

// OldestPending implements queue.AlertStore.
func (s *Store) OldestPending(ctx context.Context) ([]queue.QueueWait, error) {
	rows, err := s.db.QueryContext(ctx, oldestPendingQuery.text)
	if err != nil {
		return nil, wrap("reading the oldest pending tasks", err)
	}
	var out []queue.QueueWait
	for rows.Next() {
		var w queue.QueueWait
		if err := rows.Scan(&w.Queue, &w.TaskID, &w.AvailableAt, &w.Now); err != nil {
			_ = rows.Close()
			return nil, wrap("reading the oldest pending tasks", err)
		}
		w.AvailableAt, w.Now = w.AvailableAt.UTC(), w.Now.UTC()
		out = append(out, w)
	}
	return out, wrap("reading the oldest pending tasks", closeRows(rows))
}
