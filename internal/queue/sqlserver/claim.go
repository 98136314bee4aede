package sqlserver

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/binary"
	"fmt"
	"math"
	"strings"
	"time"

	"readpast/internal/queue"
)

// Claim bounds.
const (
	// maxLease is the longest lease: DATEADD(millisecond, …) takes an int.
	maxLease = time.Duration(math.MaxInt32) * time.Millisecond
)

// Claim leases up to p.Limit claimable tasks of p.Queue in one round trip (one
// T-SQL batch that begins and commits its own transaction).
func (s *Store) Claim(ctx context.Context, p queue.ClaimParams) ([]*queue.Task, error) {
	if err := checkClaim(p); err != nil {
		return nil, err
	}
	var tasks []*queue.Task
	err := retryDeadlock(ctx, func() error {
		token, err := newLeaseToken()
		if err != nil {
			return err
		}
		return s.write(ctx, func(ctx context.Context, c *sql.Conn) error {
			tasks, err = queryTasks(ctx, c, claimBatch.text, claimArgs(p, token)...)
			return err
		})
	})
	if err != nil {
		return nil, wrap(fmt.Sprintf("claiming from queue %q", p.Queue), err)
	}
	return tasks, nil
}

// claimArgs binds the claim batch's parameters.
func claimArgs(p queue.ClaimParams, token int64) []any {
	return []any{
		sql.Named("queue", p.Queue),
		sql.Named("owner", p.Owner),
		sql.Named("limit", p.Limit),
		sql.Named("lease_ms", leaseMillis(p.LeaseDuration)),
		sql.Named("token", token),
		sql.Named("targets", targetList(p.Targets)),
	}
}

// targetList is ClaimParams.Targets as the claim batch's @targets: NULL for
// nil (any target), ” for none (matches no row), else |a|b|. Target names
// hold no '|' (queue.CheckTargetName).
func targetList(targets []string) sql.NullString {
	switch {
	case targets == nil:
		return sql.NullString{}
	case len(targets) == 0:
		return sql.NullString{Valid: true}
	}
	return sql.NullString{String: "|" + strings.Join(targets, "|") + "|", Valid: true}
}

// checkClaim refuses what SQL Server's types bound (owner length, DATEADD's
// int) before anything is sent; queue.Checked made the shared checks.
func checkClaim(p queue.ClaimParams) error {
	if len(p.Owner) > queue.MaxNameLength {
		return &queue.ValidationError{Field: "owner", Reason: fmt.Sprintf("is longer than %d bytes", queue.MaxNameLength)}
	}
	return checkLease("lease_duration", p.LeaseDuration)
}

// checkLease validates a lease length.
func checkLease(field string, d time.Duration) error {
	if d < time.Millisecond || d > maxLease {
		return &queue.ValidationError{Field: field, Reason: fmt.Sprintf("is %s: use 1ms to %s", d, maxLease)}
	}
	return nil
}

// leaseMillis is a checked lease in whole milliseconds.
func leaseMillis(d time.Duration) int32 { return int32(d / time.Millisecond) }

// newLeaseToken returns a random 63-bit token. The claim gives each task
// token ^ id, so every task of a batch gets its own token, and a task claimed
// again gets a new one with overwhelming probability.
func newLeaseToken() (int64, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return 0, fmt.Errorf("sqlserver: generating a lease token: %w", err)
	}
	return int64(binary.BigEndian.Uint64(b[:]) &^ (1 << 63)), nil
}

// querier is *sql.DB, *sql.Tx or *sql.Conn.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// queryTasks runs a batch whose (last) result set is task rows.
func queryTasks(ctx context.Context, q querier, text string, args ...any) ([]*queue.Task, error) {
	rows, err := q.QueryContext(ctx, text, args...)
	if err != nil {
		return nil, err
	}
	var tasks []*queue.Task
	for rows.Next() {
		t, err := scanTask(rows)
		if err != nil {
			_ = rows.Close()
			return nil, err
		}
		tasks = append(tasks, t)
	}
	return tasks, closeRows(rows)
}

// closeRows returns the error of the iteration or, failing that, of Close:
// go-mssqldb reports an error raised after the last row (say by COMMIT) only
// when the rest of the batch is drained, which Close does.
func closeRows(rows *sql.Rows) error {
	err := rows.Err()
	if cerr := rows.Close(); err == nil {
		err = cerr
	}
	return err
}
