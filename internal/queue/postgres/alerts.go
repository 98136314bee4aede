package postgres

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/jackc/pgx/v5"

	"readpast/internal/queue"
)

// alertEventColumns are what ClaimAlertEvents returns, in scan order.
const alertEventColumns = `id, at, kind, task_id, queue, COALESCE(schedule_name, ''), target, COALESCE(job_name, ''), outcome, attempts, error`

// claimAlertEventsSQL leases events no node holds, skipping rows another
// claimer has locked right now (SKIP LOCKED), as the task claim does.
const claimAlertEventsSQL = `UPDATE readpast_alert_events SET claimed_by = $1, visible_at = now() + $2 * interval '1 microsecond'
	WHERE id IN (SELECT id FROM readpast_alert_events WHERE visible_at <= now()
	             ORDER BY visible_at, id LIMIT $3 FOR UPDATE SKIP LOCKED)
	RETURNING ` + alertEventColumns

// ClaimAlertEvents implements queue.AlertStore.
func (s *Store) ClaimAlertEvents(ctx context.Context, node string, limit int, lease time.Duration) ([]queue.AlertEvent, error) {
	var out []queue.AlertEvent
	err := s.write(ctx, func(ctx context.Context, c conn) error {
		rows, err := c.Query(ctx, claimAlertEventsSQL, node, lease.Microseconds(), limit)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var e queue.AlertEvent
			var outcome string
			if err := rows.Scan(&e.ID, &e.At, &e.Kind, &e.TaskID, &e.Queue, &e.Schedule, &e.Target, &e.Job, &outcome, &e.Attempts, &e.Error); err != nil {
				return err
			}
			e.At, e.Outcome = e.At.UTC(), queue.Outcome(outcome)
			out = append(out, e)
		}
		return rows.Err()
	})
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, wrap(err, "claiming alert events")
}

// errUnchanged rolls back a write whose condition change was made already.
var errUnchanged = errors.New("condition unchanged")

// addDeliverySQL merges a delivery into its key's unsent one or inserts it;
// it returns no row when the key's delivery has started (or, with $12, when
// the key exists at all).
const addDeliverySQL = `INSERT INTO readpast_alert_deliveries AS d
	(alert_key, rule_name, operator, channel, kind, scope, subject, detail, n, next_at)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, COALESCE($10, now()))
	ON CONFLICT (alert_key) DO UPDATE SET n = d.n + excluded.n
	WHERE d.state = 'pending' AND d.attempts = 0 AND NOT $11
	RETURNING d.id`

// WriteAlerts implements queue.AlertStore.
func (s *Store) WriteAlerts(ctx context.Context, w queue.AlertWrite) (bool, error) {
	err := s.inTx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		if len(w.Events) > 0 {
			tag, err := tx.Exec(ctx, `DELETE FROM readpast_alert_events WHERE id = ANY($1) AND claimed_by = $2`, w.Events, w.Node)
			if err != nil {
				return err
			}
			if tag.RowsAffected() != int64(len(w.Events)) {
				return fmt.Errorf("%d of %d alert events: %w", int64(len(w.Events))-tag.RowsAffected(), len(w.Events), queue.ErrLeaseLost)
			}
		}
		if c := w.Condition; c != nil {
			q := `DELETE FROM readpast_alert_conditions WHERE alert_key = $1`
			args := []any{c.Key}
			if c.Firing {
				q = `INSERT INTO readpast_alert_conditions (alert_key, detail) VALUES ($1, $2) ON CONFLICT (alert_key) DO NOTHING`
				args = append(args, c.Detail)
			}
			tag, err := tx.Exec(ctx, q, args...)
			if err != nil {
				return err
			}
			if tag.RowsAffected() == 0 {
				return errUnchanged
			}
		}
		for _, d := range w.Deliveries {
			if err := addDelivery(ctx, tx, d); err != nil {
				return err
			}
		}
		if w.Actor != "" {
			_, err := tx.Exec(ctx, `INSERT INTO readpast_audit (actor, action, target, detail) VALUES ($1, $2, $3, $4)`,
				w.Actor, w.Action, w.AuditTarget, w.AuditDetail)
			return err
		}
		return nil
	})
	if errors.Is(err, errUnchanged) {
		return false, nil
	}
	if errors.Is(err, queue.ErrLeaseLost) {
		return false, err
	}
	return err == nil, wrap(err, "writing alerts")
}

func addDelivery(ctx context.Context, tx pgx.Tx, d queue.NewAlertDelivery) error {
	args := func(key string, once bool) []any {
		return []any{key, d.Rule, d.Operator, d.Channel, d.Kind, d.Scope, d.Subject, d.Detail, d.Count, nullTime(d.DueAt), once}
	}
	var id int64
	err := tx.QueryRow(ctx, addDeliverySQL, args(d.Key, d.Once)...).Scan(&id)
	if err == nil || !isNoRows(err) || d.Once || d.LateKey == "" {
		if isNoRows(err) {
			return nil
		}
		return err
	}
	err = tx.QueryRow(ctx, addDeliverySQL, args(d.LateKey, false)...).Scan(&id)
	if isNoRows(err) {
		return nil
	}
	return err
}

// alertDeliveryColumns are what scanAlertDelivery reads.
const alertDeliveryColumns = `id, alert_key, rule_name, operator, channel, kind, scope, subject, detail, n, created_at,
	state, next_at, attempts, COALESCE(claimed_by, ''), last_error, ended_at`

func scanAlertDeliveries(rows pgx.Rows) ([]queue.AlertDelivery, error) {
	defer rows.Close()
	var out []queue.AlertDelivery
	for rows.Next() {
		var d queue.AlertDelivery
		var ended *time.Time
		if err := rows.Scan(&d.ID, &d.Key, &d.Rule, &d.Operator, &d.Channel, &d.Kind, &d.Scope, &d.Subject, &d.Detail, &d.Count,
			&d.CreatedAt, &d.State, &d.NextAt, &d.Attempts, &d.ClaimedBy, &d.LastError, &ended); err != nil {
			return nil, err
		}
		d.CreatedAt, d.NextAt, d.EndedAt = d.CreatedAt.UTC(), d.NextAt.UTC(), utc(ended)
		out = append(out, d)
	}
	return out, rows.Err()
}

// claimAlertDeliveriesSQL leases due deliveries, skipping rows another
// claimer has locked (SKIP LOCKED), and counts an attempt of each.
const claimAlertDeliveriesSQL = `UPDATE readpast_alert_deliveries
	SET claimed_by = $1, next_at = now() + $2 * interval '1 microsecond', attempts = attempts + 1
	WHERE id IN (SELECT id FROM readpast_alert_deliveries WHERE state = 'pending' AND next_at <= now()
	             ORDER BY next_at, id LIMIT $3 FOR UPDATE SKIP LOCKED)
	RETURNING ` + alertDeliveryColumns

// ClaimAlertDeliveries implements queue.AlertStore.
func (s *Store) ClaimAlertDeliveries(ctx context.Context, node string, limit int, lease time.Duration) ([]queue.AlertDelivery, error) {
	var out []queue.AlertDelivery
	err := s.write(ctx, func(ctx context.Context, c conn) error {
		rows, err := c.Query(ctx, claimAlertDeliveriesSQL, node, lease.Microseconds(), limit)
		if err != nil {
			return err
		}
		out, err = scanAlertDeliveries(rows)
		return err
	})
	sort.Slice(out, func(i, j int) bool { return out[i].NextAt.Before(out[j].NextAt) })
	return out, wrap(err, "claiming alert deliveries")
}

// EndAlertDelivery implements queue.AlertStore.
func (s *Store) EndAlertDelivery(ctx context.Context, e queue.AlertDeliveryEnd) error {
	state := queue.AlertPending
	switch {
	case e.Sent:
		state = queue.AlertSent
	case e.GiveUp:
		state = queue.AlertFailed
	}
	tag, err := s.execTag(ctx, `UPDATE readpast_alert_deliveries
		SET state = $1, next_at = COALESCE($2, now()), last_error = COALESCE(NULLIF($3, ''), last_error),
		    ended_at = CASE WHEN $1 = 'pending' THEN NULL ELSE now() END
		WHERE id = $4 AND claimed_by = $5 AND attempts = $6 AND state = 'pending'`,
		state, nullTime(e.RetryAt), e.Error, e.ID, e.Node, e.Attempt)
	if err != nil {
		return wrap(err, "ending alert delivery %d", e.ID)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("alert delivery %d: %w", e.ID, queue.ErrLeaseLost)
	}
	return nil
}

// AlertDeliveries implements queue.AlertStore: a backward range of the
// primary key, newest first.
func (s *Store) AlertDeliveries(ctx context.Context, q queue.AlertDeliveryQuery) ([]queue.AlertDelivery, error) {
	before, limit, err := queue.CheckAlertDeliveryQuery(q)
	if err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, `SELECT `+alertDeliveryColumns+` FROM readpast_alert_deliveries
		WHERE id < $1 AND ($2 = '' OR state = $2) ORDER BY id DESC LIMIT $3`, before, q.State, limit)
	if err != nil {
		return nil, wrap(err, "reading alert deliveries")
	}
	out, err := scanAlertDeliveries(rows)
	return out, wrap(err, "reading alert deliveries")
}

// AlertConditions implements queue.AlertStore.
func (s *Store) AlertConditions(ctx context.Context) ([]queue.AlertCondition, error) {
	rows, err := s.pool.Query(ctx, `SELECT alert_key, since, detail FROM readpast_alert_conditions ORDER BY alert_key`)
	if err != nil {
		return nil, wrap(err, "reading alert conditions")
	}
	defer rows.Close()
	var out []queue.AlertCondition
	for rows.Next() {
		var c queue.AlertCondition
		if err := rows.Scan(&c.Key, &c.Since, &c.Detail); err != nil {
			return nil, wrap(err, "reading alert conditions")
		}
		c.Since = c.Since.UTC()
		out = append(out, c)
	}
	return out, wrap(rows.Err(), "reading alert conditions")
}

// PurgeAlerts implements queue.AlertStore: short statements that skip
// rows another transaction holds.
func (s *Store) PurgeAlerts(ctx context.Context, cutoff time.Time, batch int) (int64, error) {
	a, err := s.purge(ctx, "purging alert deliveries", `DELETE FROM readpast_alert_deliveries WHERE id IN (
		SELECT id FROM readpast_alert_deliveries WHERE state IN ('sent', 'failed') AND ended_at < $1
		 ORDER BY ended_at LIMIT $2 FOR UPDATE SKIP LOCKED)`, cutoff, batch)
	if err != nil {
		return a, err
	}
	b, err := s.purge(ctx, "purging alert events", `DELETE FROM readpast_alert_events WHERE id IN (
		SELECT id FROM readpast_alert_events WHERE visible_at < $1
		 ORDER BY visible_at LIMIT $2 FOR UPDATE SKIP LOCKED)`, cutoff, batch)
	return a + b, err
}

// OldestPending implements queue.AlertStore: one seek of readpast_tasks_list
// per queue.
func (s *Store) OldestPending(ctx context.Context) ([]queue.QueueWait, error) {
	rows, err := s.pool.Query(ctx, `SELECT q.name, t.id, t.available_at, now() FROM readpast_queues q
		CROSS JOIN LATERAL (SELECT p.id, p.available_at FROM readpast_tasks p
		                    WHERE p.queue = q.name AND p.state = 'pending' ORDER BY p.id LIMIT 1) t
		WHERE NOT q.paused ORDER BY q.name`)
	if err != nil {
		return nil, wrap(err, "reading the oldest pending tasks")
	}
	defer rows.Close()
	var out []queue.QueueWait
	for rows.Next() {
		var w queue.QueueWait
		if err := rows.Scan(&w.Queue, &w.TaskID, &w.AvailableAt, &w.Now); err != nil {
			return nil, wrap(err, "reading the oldest pending tasks")
		}
		w.AvailableAt, w.Now = w.AvailableAt.UTC(), w.Now.UTC()
		out = append(out, w)
	}
	return out, wrap(rows.Err(), "reading the oldest pending tasks")
}
