package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"time"

	"readpast/internal/queue"
)

// alertEventColumns are what ClaimAlertEvents returns, in scanAlertEvent's order.
const alertEventColumns = `id, at, kind, task_id, queue, COALESCE(schedule_name, ''), target, COALESCE(job_name, ''), outcome, attempts, error`

// writeAlertEvent records that a task failed for good, in the transaction
// that ended it (endAttempt): only on that outcome, so a success costs
// nothing more.
func writeAlertEvent(tx *sql.Tx, now int64, a queue.Attempt) error {
	_, err := tx.Exec(`INSERT INTO readpast_alert_events
		(at, kind, task_id, queue, schedule_name, target, job_name, outcome, attempts, error, visible_at)
		SELECT ?, ?, id, queue, schedule_name, target, (SELECT r.job_name FROM readpast_job_runs r WHERE r.id = readpast_tasks.run_id),
		       ?, attempts, ?, ? FROM readpast_tasks WHERE id = ?`,
		now, queue.AlertEventTaskFailed, a.Outcome, a.Error, now, a.TaskID)
	if err != nil {
		return fmt.Errorf("writing the alert event of task %d: %w", a.TaskID, err)
	}
	return nil
}

// anyDue reports, on a reader, whether query finds a row due now: each
// node polls every second, and a poll that finds nothing must not take the
// one writer the claims wait for.
func (s *Store) anyDue(ctx context.Context, query string) (bool, error) {
	var one int
	err := s.r.QueryRowContext(ctx, query, s.now()).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}

// ClaimAlertEvents implements queue.AlertStore.
func (s *Store) ClaimAlertEvents(ctx context.Context, node string, limit int, lease time.Duration) ([]queue.AlertEvent, error) {
	if due, err := s.anyDue(ctx, `SELECT 1 FROM readpast_alert_events WHERE visible_at <= ? LIMIT 1`); !due {
		return nil, err
	}
	var out []queue.AlertEvent
	err := s.write(ctx, "claiming alert events", func(ctx context.Context, tx *sql.Tx, now int64) error {
		rows, err := tx.QueryContext(ctx, `UPDATE readpast_alert_events SET claimed_by = ?, visible_at = ?
			WHERE id IN (SELECT id FROM readpast_alert_events WHERE visible_at <= ? ORDER BY visible_at, id LIMIT ?)
			RETURNING `+alertEventColumns, node, now+lease.Microseconds(), now, limit)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var e queue.AlertEvent
			var at int64
			if err := rows.Scan(&e.ID, &at, &e.Kind, &e.TaskID, &e.Queue, &e.Schedule, &e.Target, &e.Job, &e.Outcome, &e.Attempts, &e.Error); err != nil {
				return err
			}
			e.At = fromMicros(at)
			out = append(out, e)
		}
		return rows.Err()
	})
	sortEvents(out)
	return out, err
}

// sortEvents puts events in id order (RETURNING gives no order).
func sortEvents(ev []queue.AlertEvent) {
	for i := 1; i < len(ev); i++ {
		for j := i; j > 0 && ev[j].ID < ev[j-1].ID; j-- {
			ev[j], ev[j-1] = ev[j-1], ev[j]
		}
	}
}

// errUnchanged rolls back a write whose condition change was made already.
var errUnchanged = errors.New("condition unchanged")

// WriteAlerts implements queue.AlertStore.
func (s *Store) WriteAlerts(ctx context.Context, w queue.AlertWrite) (bool, error) {
	err := s.write(ctx, "writing alerts", func(ctx context.Context, tx *sql.Tx, now int64) error {
		for _, id := range w.Events {
			r, err := tx.Exec(`DELETE FROM readpast_alert_events WHERE id = ? AND claimed_by = ?`, id, w.Node)
			if err != nil {
				return err
			}
			if n, _ := r.RowsAffected(); n == 0 {
				return fmt.Errorf("alert event %d: %w", id, queue.ErrLeaseLost)
			}
		}
		if c := w.Condition; c != nil {
			var r sql.Result
			var err error
			if c.Firing {
				r, err = tx.Exec(`INSERT INTO readpast_alert_conditions (alert_key, since, detail) VALUES (?, ?, ?)
					ON CONFLICT (alert_key) DO NOTHING`, c.Key, now, c.Detail)
			} else {
				r, err = tx.Exec(`DELETE FROM readpast_alert_conditions WHERE alert_key = ?`, c.Key)
			}
			if err != nil {
				return err
			}
			if n, _ := r.RowsAffected(); n == 0 {
				return errUnchanged
			}
		}
		for _, d := range w.Deliveries {
			if err := addDelivery(tx, now, d); err != nil {
				return err
			}
		}
		if w.Actor != "" {
			return s.audit(tx, now, w.Actor, w.Action, w.AuditTarget, w.AuditDetail)
		}
		return nil
	})
	if errors.Is(err, errUnchanged) {
		return false, nil
	}
	return err == nil, err
}

// addDelivery merges d into its key's unsent delivery, or inserts it under
// its key, or under its late key when the key's delivery has started.
func addDelivery(tx *sql.Tx, now int64, d queue.NewAlertDelivery) error {
	due := now
	if !d.DueAt.IsZero() {
		due = micros(d.DueAt)
	}
	merge := `ON CONFLICT (alert_key) DO UPDATE SET n = n + excluded.n WHERE state = 'pending' AND attempts = 0`
	if d.Once {
		merge = `ON CONFLICT (alert_key) DO NOTHING`
	}
	insert := `INSERT INTO readpast_alert_deliveries
		(alert_key, rule_name, operator, channel, kind, scope, subject, detail, n, created_at, next_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) `
	args := func(key string) []any {
		return []any{key, d.Rule, d.Operator, d.Channel, d.Kind, d.Scope, d.Subject, d.Detail, d.Count, now, due}
	}
	r, err := tx.Exec(insert+merge, args(d.Key)...)
	if err != nil {
		return fmt.Errorf("adding alert %s: %w", d.Key, err)
	}
	if n, _ := r.RowsAffected(); n > 0 || d.Once || d.LateKey == "" {
		return nil
	}
	if _, err := tx.Exec(insert+`ON CONFLICT (alert_key) DO UPDATE SET n = n + excluded.n`, args(d.LateKey)...); err != nil {
		return fmt.Errorf("adding alert %s: %w", d.LateKey, err)
	}
	return nil
}

// alertDeliveryColumns are what scanAlertDelivery reads.
const alertDeliveryColumns = `id, alert_key, rule_name, operator, channel, kind, scope, subject, detail, n, created_at,
	state, next_at, attempts, COALESCE(claimed_by, ''), last_error, ended_at`

func scanAlertDelivery(rows *sql.Rows) (queue.AlertDelivery, error) {
	var d queue.AlertDelivery
	var created, next int64
	var ended sql.NullInt64
	err := rows.Scan(&d.ID, &d.Key, &d.Rule, &d.Operator, &d.Channel, &d.Kind, &d.Scope, &d.Subject, &d.Detail, &d.Count,
		&created, &d.State, &next, &d.Attempts, &d.ClaimedBy, &d.LastError, &ended)
	d.CreatedAt, d.NextAt, d.EndedAt = fromMicros(created), fromMicros(next), nullMicros(ended)
	return d, err
}

// ClaimAlertDeliveries implements queue.AlertStore.
func (s *Store) ClaimAlertDeliveries(ctx context.Context, node string, limit int, lease time.Duration) ([]queue.AlertDelivery, error) {
	if due, err := s.anyDue(ctx, `SELECT 1 FROM readpast_alert_deliveries WHERE state = 'pending' AND next_at <= ? LIMIT 1`); !due {
		return nil, err
	}
	var out []queue.AlertDelivery
	err := s.write(ctx, "claiming alert deliveries", func(ctx context.Context, tx *sql.Tx, now int64) error {
		rows, err := tx.QueryContext(ctx, `UPDATE readpast_alert_deliveries
			SET claimed_by = ?, next_at = ?, attempts = attempts + 1
			WHERE id IN (SELECT id FROM readpast_alert_deliveries WHERE state = 'pending' AND next_at <= ?
			             ORDER BY next_at, id LIMIT ?)
			RETURNING `+alertDeliveryColumns, node, now+lease.Microseconds(), now, limit)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			d, err := scanAlertDelivery(rows)
			if err != nil {
				return err
			}
			out = append(out, d)
		}
		return rows.Err()
	})
	return out, err
}

// EndAlertDelivery implements queue.AlertStore.
func (s *Store) EndAlertDelivery(ctx context.Context, e queue.AlertDeliveryEnd) error {
	return s.write(ctx, fmt.Sprintf("ending alert delivery %d", e.ID), func(ctx context.Context, tx *sql.Tx, now int64) error {
		state, next, ended := alertEndState(e, now)
		r, err := tx.Exec(`UPDATE readpast_alert_deliveries SET state = ?, next_at = ?, last_error = COALESCE(NULLIF(?, ''), last_error), ended_at = ?
			WHERE id = ? AND claimed_by = ? AND attempts = ? AND state = 'pending'`,
			state, next, e.Error, ended, e.ID, e.Node, e.Attempt)
		if err != nil {
			return err
		}
		if n, _ := r.RowsAffected(); n == 0 {
			return queue.ErrLeaseLost
		}
		return nil
	})
}

// alertEndState is the row an ended attempt leaves: sent or given up now,
// or pending until its retry.
func alertEndState(e queue.AlertDeliveryEnd, now int64) (state string, next int64, ended sql.NullInt64) {
	switch {
	case e.Sent:
		return queue.AlertSent, now, sql.NullInt64{Int64: now, Valid: true}
	case e.GiveUp:
		return queue.AlertFailed, now, sql.NullInt64{Int64: now, Valid: true}
	}
	next = now
	if !e.RetryAt.IsZero() {
		next = micros(e.RetryAt)
	}
	return queue.AlertPending, next, sql.NullInt64{}
}

// AlertDeliveries implements queue.AlertStore: a range of the rowid, newest first.
func (s *Store) AlertDeliveries(ctx context.Context, q queue.AlertDeliveryQuery) ([]queue.AlertDelivery, error) {
	before, limit, err := queue.CheckAlertDeliveryQuery(q)
	if err != nil {
		return nil, err
	}
	where, args := `id < ?`, []any{before}
	if q.State != "" {
		where, args = where+` AND state = ?`, append(args, q.State)
	}
	rows, err := s.r.QueryContext(ctx, `SELECT `+alertDeliveryColumns+` FROM readpast_alert_deliveries
		WHERE `+where+` ORDER BY id DESC LIMIT ?`, append(args, limit)...)
	if err != nil {
		return nil, fmt.Errorf("reading alert deliveries: %w", err)
	}
	defer rows.Close()
	var out []queue.AlertDelivery
	for rows.Next() {
		d, err := scanAlertDelivery(rows)
		if err != nil {
			return nil, fmt.Errorf("reading alert deliveries: %w", err)
		}
		out = append(out, d)
	}
	return out, rows.Err()
}

// AlertConditions implements queue.AlertStore.
func (s *Store) AlertConditions(ctx context.Context) ([]queue.AlertCondition, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT alert_key, since, detail FROM readpast_alert_conditions ORDER BY alert_key`)
	if err != nil {
		return nil, fmt.Errorf("reading alert conditions: %w", err)
	}
	defer rows.Close()
	var out []queue.AlertCondition
	for rows.Next() {
		var c queue.AlertCondition
		var since int64
		if err := rows.Scan(&c.Key, &since, &c.Detail); err != nil {
			return nil, fmt.Errorf("reading alert conditions: %w", err)
		}
		c.Since = fromMicros(since)
		out = append(out, c)
	}
	return out, rows.Err()
}

// PurgeAlerts implements queue.AlertStore.
func (s *Store) PurgeAlerts(ctx context.Context, cutoff time.Time, batch int) (int64, error) {
	var n int64
	err := s.writeUndurable(ctx, "purging alerts", func(ctx context.Context, tx *sql.Tx, now int64) error {
		for _, q := range []string{
			`DELETE FROM readpast_alert_deliveries WHERE id IN (SELECT id FROM readpast_alert_deliveries
				WHERE state IN ('sent', 'failed') AND ended_at < ? ORDER BY ended_at LIMIT ?)`,
			`DELETE FROM readpast_alert_events WHERE id IN (SELECT id FROM readpast_alert_events
				WHERE visible_at < ? ORDER BY visible_at LIMIT ?)`,
		} {
			r, err := tx.Exec(q, micros(cutoff), batch)
			if err != nil {
				return err
			}
			m, _ := r.RowsAffected()
			n += m
		}
		return nil
	})
	return n, err
}

// OldestPending implements queue.AlertStore: one seek of
// readpast_tasks_queue_state per queue.
func (s *Store) OldestPending(ctx context.Context) ([]queue.QueueWait, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT q.name, t.id, t.available_at FROM readpast_queues q
		JOIN readpast_tasks t ON t.id = (SELECT p.id FROM readpast_tasks p WHERE p.queue = q.name AND p.state = 'pending' ORDER BY p.id LIMIT 1)
		WHERE q.paused = 0 ORDER BY q.name`)
	if err != nil {
		return nil, fmt.Errorf("reading the oldest pending tasks: %w", err)
	}
	defer rows.Close()
	now := fromMicros(s.now())
	var out []queue.QueueWait
	for rows.Next() {
		var w queue.QueueWait
		var avail int64
		if err := rows.Scan(&w.Queue, &w.TaskID, &avail); err != nil {
			return nil, fmt.Errorf("reading the oldest pending tasks: %w", err)
		}
		w.AvailableAt, w.Now = fromMicros(avail), now
		out = append(out, w)
	}
	return out, rows.Err()
}
