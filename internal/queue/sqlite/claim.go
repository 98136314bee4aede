package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"readpast/internal/queue"
)

// Claim implements queue.Store. SQLite runs it as one short write transaction;
// the steps are those of docs/QUEUE.md.
func (s *Store) Claim(ctx context.Context, p queue.ClaimParams) ([]*queue.Task, error) {
	if err := queue.CheckClaim(p); err != nil {
		return nil, err
	}
	var out []*queue.Task
	err := s.write(ctx, "claiming from queue "+p.Queue, func(ctx context.Context, tx *sql.Tx, now int64) error {
		var err error
		out, err = claimTx(ctx, tx, now, p)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// claimTx is Claim inside the caller's write transaction.
func claimTx(ctx context.Context, tx *sql.Tx, now int64, p queue.ClaimParams) ([]*queue.Task, error) {
	limit, err := queueRoom(tx, p.Queue, p.Limit)
	if err != nil || limit == 0 {
		return nil, err
	}
	picked, perGroup, err := pickCandidates(tx, p.Queue, now, limit)
	if err != nil || len(picked) == 0 {
		return nil, err
	}
	token := newToken()
	expires := now + p.LeaseDuration.Microseconds()
	args := []any{p.Owner, token, expires, now}
	for _, id := range picked {
		args = append(args, id)
	}
	_, err = tx.Exec(`UPDATE readpast_tasks
		SET state = 'running', attempts = attempts + 1, lease_owner = ?, lease_token = ?,
		    lease_expires_at = ?, started_at = ?, cancel_requested = 0, session_id = NULL
		WHERE id IN (`+placeholders(len(picked))+`)`, args...)
	if err != nil {
		return nil, fmt.Errorf("marking claimed tasks running: %w", err)
	}
	for g, n := range perGroup {
		if _, err := tx.Exec(`UPDATE readpast_groups SET running = running + ? WHERE name = ?`, n, g); err != nil {
			return nil, fmt.Errorf("counting group %s: %w", g, err)
		}
	}
	return getTasks(ctx, tx, picked)
}

// queueRoom returns how many tasks the queue admits now: 0 when paused, the
// free part of max_running when capped, else want.
func queueRoom(tx *sql.Tx, name string, want int) (int, error) {
	var paused bool
	var maxRunning sql.NullInt64
	err := tx.QueryRow(`SELECT paused, max_running FROM readpast_queues WHERE name = ?`, name).Scan(&paused, &maxRunning)
	switch {
	case err == sql.ErrNoRows:
		return want, nil
	case err != nil:
		return 0, fmt.Errorf("reading queue settings: %w", err)
	case paused:
		return 0, nil
	case !maxRunning.Valid:
		return want, nil
	}
	var running int64
	if err := tx.QueryRow(`SELECT count(*) FROM readpast_tasks WHERE state = 'running' AND queue = ?`, name).Scan(&running); err != nil {
		return 0, fmt.Errorf("counting running tasks: %w", err)
	}
	return int(max(0, min(int64(want), maxRunning.Int64-running))), nil
}

// pickCandidates walks claimable tasks in claim order and admits up to limit,
// at most each group's free slots. It reads on in pages while a page's tasks
// are held back by their groups, so a long run of one group's tasks cannot
// hide the free tasks behind it.
//
// Transactional tasks are admitted one at a time, cluster-wide, as if they
// shared a group of limit 1: each holds SQLite's one writer for its whole body
// (transactional.go), so a second one could only wait for it, claimed and
// with its timeout running, while the first holds the writer.
func pickCandidates(tx *sql.Tx, q string, now int64, limit int) ([]int64, map[string]int, error) {
	txFree, err := transactionalFree(tx)
	if err != nil {
		return nil, nil, err
	}
	free := map[string]int{}
	perGroup := map[string]int{}
	var picked []int64
	type key struct {
		prio int
		at   int64
		id   int64
	}
	var last *key
	page := limit*2 + 16
	for round := 0; round < 20 && len(picked) < limit; round++ {
		query := `SELECT id, priority, available_at, group_name, transactional FROM readpast_tasks INDEXED BY readpast_tasks_claim
			WHERE queue = ? AND state = 'pending' AND chain_wait = 0 AND available_at <= ?
			  AND (group_name IS NULL OR group_name NOT IN
			       (SELECT name FROM readpast_groups WHERE running >= max_running))`
		args := []any{q, now}
		if last != nil {
			query += ` AND (priority, available_at, id) > (?, ?, ?)`
			args = append(args, last.prio, last.at, last.id)
		}
		query += ` ORDER BY priority, available_at, id LIMIT ?`
		args = append(args, page)
		rows, err := tx.Query(query, args...)
		if err != nil {
			return nil, nil, fmt.Errorf("reading candidates: %w", err)
		}
		type cand struct {
			key
			group         sql.NullString
			transactional bool
		}
		var cands []cand
		for rows.Next() {
			var c cand
			if err := rows.Scan(&c.id, &c.prio, &c.at, &c.group, &c.transactional); err != nil {
				rows.Close()
				return nil, nil, err
			}
			cands = append(cands, c)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, nil, err
		}
		n := len(cands)
		for _, c := range cands {
			last = &c.key
			if len(picked) == limit {
				break
			}
			if c.transactional && !txFree {
				continue
			}
			if g := c.group; g.Valid {
				slots, known := free[g.String]
				if !known {
					if slots, err = groupFree(tx, g.String); err != nil {
						return nil, nil, err
					}
				}
				if slots <= 0 {
					free[g.String] = 0
					continue
				}
				free[g.String] = slots - 1
				perGroup[g.String]++
			}
			picked = append(picked, c.id)
			if c.transactional {
				txFree = false
			}
		}
		if n < page {
			break
		}
	}
	return picked, perGroup, nil
}

// transactionalFree reports whether no transactional task runs now.
func transactionalFree(tx *sql.Tx) (bool, error) {
	var running bool
	err := tx.QueryRow(`SELECT EXISTS (SELECT 1 FROM readpast_tasks INDEXED BY readpast_tasks_running
		WHERE state = 'running' AND transactional = 1)`).Scan(&running)
	if err != nil {
		return false, fmt.Errorf("looking for a running transactional task: %w", err)
	}
	return !running, nil
}

func groupFree(tx *sql.Tx, g string) (int, error) {
	var maxRunning, running int
	err := tx.QueryRow(`SELECT max_running, running FROM readpast_groups WHERE name = ?`, g).Scan(&maxRunning, &running)
	if err == sql.ErrNoRows {
		return 1, nil
	}
	if err != nil {
		return 0, fmt.Errorf("reading group %s: %w", g, err)
	}
	return maxRunning - running, nil
}

func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?,", n), ",")
}
