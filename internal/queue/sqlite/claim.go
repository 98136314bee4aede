package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"

	"readpast/internal/queue"
)

// Claim implements queue.Store. SQLite runs it as one short write transaction;
// the steps are those of docs/QUEUE.md.
func (s *Store) Claim(ctx context.Context, p queue.ClaimParams) ([]*queue.Task, error) {
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

// claimTx is Claim inside the caller's write transaction (docs/QUEUE.md,
// "Claiming behind a backlog"): due delayed tasks of the queue become ready,
// then the claim takes the first ready tasks in claim order from the
// ungrouped stream and from the groups with free slots.
func claimTx(ctx context.Context, tx *sql.Tx, now int64, p queue.ClaimParams) ([]*queue.Task, error) {
	limit, err := queueRoom(tx, p.Queue, p.Limit)
	if err != nil || limit == 0 {
		return nil, err
	}
	if err := promoteDue(tx, p.Queue, now); err != nil {
		return nil, err
	}
	picked, perGroup, err := pickCandidates(tx, p.Queue, limit, targetFilter(p.Targets))
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

// promoteDue makes the queue's delayed tasks that are due ready, at most 1000
// a claim; most claims find none in one index probe.
func promoteDue(tx *sql.Tx, q string, now int64) error {
	_, err := tx.Exec(`UPDATE readpast_tasks SET delayed = 0 WHERE id IN (
		SELECT id FROM readpast_tasks INDEXED BY readpast_tasks_delayed
		 WHERE queue = ? AND state = 'pending' AND delayed = 1 AND available_at <= ?
		 ORDER BY available_at LIMIT 1000)`, q, now)
	if err != nil {
		return fmt.Errorf("making due delayed tasks ready: %w", err)
	}
	return nil
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

// candidate is a ready task, with its claim order key.
type candidate struct {
	id            int64
	prio          int
	at            int64
	group         string
	transactional bool
}

func (c candidate) before(d candidate) bool {
	if c.prio != d.prio {
		return c.prio < d.prio
	}
	if c.at != d.at {
		return c.at < d.at
	}
	return c.id < d.id
}

// pickCandidates chooses up to limit ready tasks of queue q in claim order,
// reading only rows it may take: the first limit ungrouped tasks, and of each
// group with ready tasks and free slots its first min(free, limit) tasks. The
// groups are found by a skip scan of the grouped index (one probe per group),
// so tasks of full groups are never read.
//
// Transactional tasks are admitted one at a time, cluster-wide, as if they
// shared a group of limit 1: each holds SQLite's one writer for its whole body
// (transactional.go), so a second one could only wait for it, claimed and
// with its timeout running, while the first holds the writer.
func pickCandidates(tx *sql.Tx, q string, limit int, only filter) ([]int64, map[string]int, error) {
	txFree, err := transactionalFree(tx)
	if err != nil {
		return nil, nil, err
	}
	cands, err := readyUngrouped(tx, q, 0, limit, only)
	if err != nil {
		return nil, nil, err
	}
	if txFree {
		tx1, err := readyUngrouped(tx, q, 1, 1, only)
		if err != nil {
			return nil, nil, err
		}
		cands = append(cands, tx1...)
	}
	free, err := openGroups(tx, q)
	if err != nil {
		return nil, nil, err
	}
	for g, slots := range free {
		grouped, err := readyOfGroup(tx, q, g, min(slots, limit), only)
		if err != nil {
			return nil, nil, err
		}
		cands = append(cands, grouped...)
	}
	slices.SortFunc(cands, func(a, b candidate) int {
		if a.before(b) {
			return -1
		}
		return 1
	})
	perGroup := map[string]int{}
	var picked []int64
	for _, c := range cands {
		if len(picked) == limit {
			break
		}
		if c.transactional {
			if !txFree {
				continue
			}
			txFree = false
		}
		if c.group != "" {
			if perGroup[c.group] == free[c.group] {
				continue
			}
			perGroup[c.group]++
		}
		picked = append(picked, c.id)
	}
	return picked, perGroup, nil
}

// readyUngrouped reads the first n ready ungrouped tasks of q whose
// transactional flag is tx.
func readyUngrouped(tx *sql.Tx, q string, transactional, n int, only filter) ([]candidate, error) {
	return scanCandidates(tx.Query(`SELECT id, priority, available_at, '', transactional
		FROM readpast_tasks INDEXED BY readpast_tasks_ready
		WHERE queue = ? AND transactional = ? AND state = 'pending' AND chain_wait = 0 AND delayed = 0 AND group_name IS NULL`+only.sql+`
		ORDER BY priority, available_at, id LIMIT ?`, only.around([]any{q, transactional}, n)...))
}

// readyOfGroup reads the first n ready tasks of group g in q.
func readyOfGroup(tx *sql.Tx, q, g string, n int, only filter) ([]candidate, error) {
	return scanCandidates(tx.Query(`SELECT id, priority, available_at, group_name, transactional
		FROM readpast_tasks INDEXED BY readpast_tasks_ready_grouped
		WHERE queue = ? AND group_name = ? AND state = 'pending' AND chain_wait = 0 AND delayed = 0`+only.sql+`
		ORDER BY priority, available_at, id LIMIT ?`, only.around([]any{q, g}, n)...))
}

// filter is the claim's residual predicate on the task's target: only the
// targets a node serves (ClaimParams.Targets). It is read off the ready
// index's rows, which it does not change (docs/TARGETS.md, "What a claim
// costs"); an empty filter reads every target's tasks.
type filter struct {
	sql  string
	args []any
}

func targetFilter(targets []string) filter {
	if targets == nil {
		return filter{}
	}
	if len(targets) == 0 {
		return filter{sql: " AND target IN (NULL)"} // matches nothing, and keeps the index usable
	}
	f := filter{sql: " AND target IN (" + placeholders(len(targets)) + ")"}
	for _, t := range targets {
		f.args = append(f.args, t)
	}
	return f
}

// around is the query's arguments: before, the filter's, then limit.
func (f filter) around(before []any, limit int) []any {
	return append(append(before, f.args...), limit)
}

func scanCandidates(rows *sql.Rows, err error) ([]candidate, error) {
	if err != nil {
		return nil, fmt.Errorf("reading candidates: %w", err)
	}
	defer rows.Close()
	var out []candidate
	for rows.Next() {
		var c candidate
		if err := rows.Scan(&c.id, &c.prio, &c.at, &c.group, &c.transactional); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// openGroups returns the groups with ready tasks in q and free slots, with
// their free slots: a skip scan of the grouped index, one probe per group.
func openGroups(tx *sql.Tx, q string) (map[string]int, error) {
	free := map[string]int{}
	last := ""
	for {
		var g string
		err := tx.QueryRow(`SELECT group_name FROM readpast_tasks INDEXED BY readpast_tasks_ready_grouped
			WHERE queue = ? AND state = 'pending' AND chain_wait = 0 AND delayed = 0 AND group_name IS NOT NULL AND group_name > ?
			ORDER BY group_name LIMIT 1`, q, last).Scan(&g)
		if errors.Is(err, sql.ErrNoRows) {
			return free, nil
		}
		if err != nil {
			return nil, fmt.Errorf("finding groups with ready tasks: %w", err)
		}
		slots, err := groupFree(tx, g)
		if err != nil {
			return nil, err
		}
		if slots > 0 {
			free[g] = slots
		}
		last = g
	}
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
