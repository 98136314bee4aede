package sqlserver

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"readpast/internal/queue"
)

// finishMode says which of the callers of finishCore is ending the attempt.
type finishMode int

const (
	modeFinish  finishMode = iota // a worker ends its attempt
	modeRelease                   // shutdown: pending again at once
	modeReclaim                   // the lease expired: outcome lost
)

// Finish records attempts that ended, each in its own short transaction (one
// round trip each) so that no transaction holds more than one chain row and one
// group row, several at once (finishAll). A result's Err is
// queue.ErrLeaseLost when that lease was not current; that attempt changed
// nothing.
func (s *Store) Finish(ctx context.Context, attempts []queue.Attempt) ([]queue.FinishResult, error) {
	return s.finishAll(ctx, attempts, modeFinish)
}

// Release gives running tasks back at once (node shutdown): the attempt is
// logged with its outcome and the task is pending again without back-off,
// whatever its attempt budget (queue.AfterAttempt with release).
func (s *Store) Release(ctx context.Context, attempts []queue.Attempt) ([]queue.FinishResult, error) {
	return s.finishAll(ctx, attempts, modeRelease)
}

// ReclaimExpired takes back up to limit (0: 100) running tasks whose lease
// expired; each counts as an attempt with outcome lost, logged under the node
// and worker of the lost lease, as running from the started_at its claim set
// until now. A task whose holder heartbeated or finished in the meantime is
// left alone and not reported.
func (s *Store) ReclaimExpired(ctx context.Context, limit int) ([]queue.FinishResult, error) {
	if limit < 1 {
		limit = 100
	}
	limit = min(limit, queue.MaxClaimLimit)
	var lost []queue.Attempt
	err := retryDeadlock(ctx, func() error {
		lost = lost[:0]
		rows, err := s.db.QueryContext(ctx, expiredLeases.text, limitArgs(limit)...)
		if err != nil {
			return err
		}
		for rows.Next() {
			var (
				a              queue.Attempt
				owner, session sql.NullString
				started        sql.NullTime
			)
			if err := rows.Scan(&a.TaskID, &a.Token, &owner, &session, &started); err != nil {
				_ = rows.Close()
				return err
			}
			a.Node, a.Worker = queue.SplitOwner(owner.String)
			a.SessionID = session.String
			a.StartedAt = utc(started)
			a.Outcome, a.Error = queue.OutcomeLost, queue.LostError(owner.String)
			lost = append(lost, a)
		}
		return closeRows(rows)
	})
	if err != nil {
		return nil, wrap("listing expired leases", err)
	}
	// A lost attempt's body may still run on the target (its node frozen or
	// cut off): the node's ender stops it now, while the task cannot be
	// claimed yet, so it never runs beside the next attempt.
	queue.EndLostSessions(ctx, lost)
	var out []queue.FinishResult
	for _, a := range lost {
		res, err := s.finishOne(ctx, a, modeReclaim)
		if err != nil {
			return out, err
		}
		if res.Err == nil {
			out = append(out, res)
		}
	}
	return out, nil
}

// limitArgs binds a single @limit parameter.
func limitArgs(limit int) []any { return []any{sql.Named("limit", limit)} }

// finishSessions is how many sessions one Finish or Release call ends its
// attempts on at once. Each attempt ends in a transaction of its own, and a
// transaction's commit waits for its log flush; ended one after another, a
// node's finishes were bounded by one round trip and one flush each, however
// many workers it ran. On several sessions the flushes overlap (SQL Server
// writes the log blocks of concurrent commits together), and the rollup rows
// they add to are the stripes of their tasks (sql_rollups.go, "Stripes"),
// which consecutive tasks do not share. Eight is a few more than a small
// server's cores and half the stripes.
const finishSessions = 8

// finishWidth is how many sessions a call of n attempts ends them on: up to
// finishSessions, and at most one more than the pool holds idle now, so a
// pool grows by one session a call instead of opening several at once. Each
// new session is a login on SQL Server (pool.go), and on
// Babelfish it compiles the finish batch afresh, which under load took
// seconds each: eight at once on a fresh pool ran past the write timeout.
func (s *Store) finishWidth(n int) int {
	return max(1, min(finishSessions, n, s.db.Stats().Idle+1))
}

// finishAll ends the attempts, each in its own transaction, on up to
// finishWidth sessions at once; the results are in the attempts' order.
// On a store error it stops taking more and returns the first error with the
// results of every attempt that was recorded, in order: a caller counts what
// ended from them (workers.CountCalls), and the attempts it makes again
// after the error would find those leases gone and report them lost.
func (s *Store) finishAll(ctx context.Context, attempts []queue.Attempt, mode finishMode) ([]queue.FinishResult, error) {
	out := make([]queue.FinishResult, len(attempts))
	errs := make([]error, len(attempts))
	var (
		next   atomic.Int64
		failed atomic.Bool
		wg     sync.WaitGroup
	)
	for range s.finishWidth(len(attempts)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !failed.Load() {
				i := int(next.Add(1) - 1)
				if i >= len(attempts) {
					return
				}
				if out[i], errs[i] = s.finishOne(ctx, attempts[i], mode); errs[i] != nil {
					failed.Store(true)
				}
			}
		}()
	}
	wg.Wait()
	var first error
	recorded := out[:0]
	for i, err := range errs {
		switch {
		case err != nil && first == nil:
			first = err
		case err == nil && out[i].TaskID != 0: // an attempt not taken after the error has no result
			recorded = append(recorded, out[i])
		}
	}
	if first != nil {
		return recorded, first
	}
	return out, nil
}

// finishOne ends one attempt in its own transaction, retrying a deadlock victim.
func (s *Store) finishOne(ctx context.Context, a queue.Attempt, mode finishMode) (queue.FinishResult, error) {
	var res queue.FinishResult
	err := retryConflicts(ctx, func() error {
		var err error
		return s.write(ctx, func(ctx context.Context, c *sql.Conn) error {
			res, err = runFinish(ctx, c, finishBatch.text, a, mode)
			return err
		})
	})
	if err != nil {
		return queue.FinishResult{}, wrap(fmt.Sprintf("finishing task %d", a.TaskID), err)
	}
	return res, nil
}

// runFinish sends a finish batch (standalone or inside a transaction) and reads
// its one result row.
func runFinish(ctx context.Context, q querier, text string, a queue.Attempt, mode finishMode) (queue.FinishResult, error) {
	res := queue.FinishResult{TaskID: a.TaskID}
	rows, err := q.QueryContext(ctx, text, finishArgs(a, mode, backoffMillis())...)
	if err != nil {
		return res, err
	}
	var (
		lost      bool
		state     sql.NullString
		available sql.NullTime
	)
	if !rows.Next() {
		if err := closeRows(rows); err != nil {
			return res, err
		}
		return res, errors.New("the finish batch returned no result row")
	}
	if err := rows.Scan(&lost, &state, &available); err != nil {
		_ = rows.Close()
		return res, err
	}
	if err := closeRows(rows); err != nil {
		return res, err
	}
	res.State = queue.State(state.String)
	if lost {
		res.Err = fmt.Errorf("finishing task %d with lease token %d: %w", a.TaskID, a.Token, queue.ErrLeaseLost)
		return res, nil
	}
	if res.State == queue.StatePending {
		res.Retry = utc(available)
	}
	return res, nil
}

// finishArgs binds the finish batch's parameters. backoffs[n-1] is the back-off
// after retry n, in milliseconds.
func finishArgs(a queue.Attempt, mode finishMode, backoffs [12]int32) []any {
	args := []any{
		sql.Named("id", a.TaskID),
		sql.Named("token", a.Token),
		sql.Named("outcome", varchar(string(a.Outcome))),
		sql.Named("error", nullMaxText(a.Error)),
		sql.Named("node", nullString(a.Node)),
		sql.Named("worker", nullString(a.Worker)),
		sql.Named("session", nullString(a.SessionID)),
		sql.Named("started", datetime2(a.StartedAt)),
		sql.Named("finished", datetime2(a.FinishedAt)),
		sql.Named("rows", a.RowsAffected),
		sql.Named("messages", nullMaxText(a.Messages)),
		sql.Named("results", nullMaxText(a.Results)),
		sql.Named("release", bit(mode == modeRelease)),
		sql.Named("uncounted", bit(a.Uncounted)),
		sql.Named("reclaim", bit(mode == modeReclaim)),
	}
	for i, ms := range backoffs {
		args = append(args, sql.Named("b"+strconv.Itoa(i+1), ms))
	}
	return args
}

// backoffMillis draws queue.Backoff(n) for n = 1..12 (Backoff is flat after 12),
// so the batch can pick the one for the retry number it finds in the row.
func backoffMillis() [12]int32 {
	var b [12]int32
	for i := range b {
		b[i] = int32(queue.Backoff(i+1) / time.Millisecond)
	}
	return b
}

// Heartbeat extends the leases still held, in one round trip, and reports
// those lost and those whose cancellation was requested.
func (s *Store) Heartbeat(ctx context.Context, leases []queue.Lease, lease time.Duration) (queue.HeartbeatResult, error) {
	var res queue.HeartbeatResult
	if len(leases) == 0 {
		return res, nil
	}
	if err := checkLease("lease", lease); err != nil {
		return res, err
	}
	args, err := heartbeatArgs(leases, lease)
	if err != nil {
		return res, err
	}
	type beat struct {
		id                    int64
		lost, cancelRequested bool
	}
	var beats []beat
	// A deadlock victim's statement was rolled back; extending a lease again
	// is idempotent, so the whole batch runs again, as every other write does.
	err = retryDeadlock(ctx, func() error {
		return s.write(ctx, func(ctx context.Context, c *sql.Conn) error {
			var err error
			beats, err = queryAll(ctx, c, heartbeatBatch.text, args, func(r *sql.Rows) (beat, error) {
				var b beat
				err := r.Scan(&b.id, &b.lost, &b.cancelRequested)
				return b, err
			})
			return err
		})
	})
	if err != nil {
		return res, wrap("extending leases", err)
	}
	for _, b := range beats {
		switch {
		case b.lost:
			res.Lost = append(res.Lost, b.id)
		case b.cancelRequested:
			res.CancelRequested = append(res.CancelRequested, b.id)
		}
	}
	return res, nil
}

// heartbeatArgs binds the heartbeat batch's parameters: the leases as JSON,
// in the order given.
func heartbeatArgs(leases []queue.Lease, lease time.Duration) ([]any, error) {
	type jsonLease struct {
		ID    string `json:"id"`
		Token string `json:"token"`
	}
	list := make([]jsonLease, len(leases))
	for i, l := range leases {
		list[i] = jsonLease{ID: strconv.FormatInt(l.TaskID, 10), Token: strconv.FormatInt(l.Token, 10)}
	}
	doc, err := json.Marshal(list)
	if err != nil {
		return nil, fmt.Errorf("sqlserver: encoding leases: %w", err)
	}
	return []any{
		sql.Named("leases", maxText(string(doc))),
		sql.Named("lease_ms", leaseMillis(lease)),
	}, nil
}

// SetSession records the target session (SPID) of a running attempt.
func (s *Store) SetSession(ctx context.Context, l queue.Lease, sessionID string) error {
	if len([]rune(sessionID)) > 64 {
		return &queue.ValidationError{Field: "session_id", Reason: "is longer than 64 characters"}
	}
	var n int64
	err := retryDeadlock(ctx, func() error {
		return s.write(ctx, func(ctx context.Context, c *sql.Conn) error {
			return c.QueryRowContext(ctx, setSessionBatch.text, setSessionArgs(l, sessionID)...).Scan(&n)
		})
	})
	if err != nil {
		return wrap(fmt.Sprintf("recording the session of task %d", l.TaskID), err)
	}
	if n == 0 {
		return fmt.Errorf("recording the session of task %d: %w", l.TaskID, queue.ErrLeaseLost)
	}
	return nil
}

// setSessionArgs binds the set-session batch's parameters.
func setSessionArgs(l queue.Lease, sessionID string) []any {
	return []any{
		sql.Named("session", sessionID),
		sql.Named("id", l.TaskID),
		sql.Named("token", l.Token),
	}
}
