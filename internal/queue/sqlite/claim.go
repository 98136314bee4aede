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
// then the claim takes the first ready tasks in claim order of the targets
// it serves (all for nil), from the ungrouped stream and from the groups with
// free slots.
func claimTx(ctx context.Context, tx *sql.Tx, now int64, p queue.ClaimParams) ([]*queue.Task, error) {
	limit, err := queueRoom(tx, p.Queue, p.Limit)
	if err != nil || limit == 0 {
		return nil, err
	}
	if err := promoteDue(tx, p.Queue, now); err != nil {
		return nil, err
	}
	picked, perGroup, err := pickCandidates(tx, p.Queue, limit, p.Targets)
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
// reading only rows it may take: of each target it serves, the first limit
// ungrouped tasks, and of each group with ready tasks of those targets and
// free slots, its first min(free, limit) tasks of each of them. The ready
// indexes put the target after the queue, so each read is a range of one
// target: ready tasks of other targets are never read (docs/TARGETS.md,
// "Flat behind another target's backlog"). The groups are found by a skip
// scan of the grouped index (one probe per group and target), so tasks of
// full groups are never read either.
//
// Transactional tasks are admitted one at a time, cluster-wide, as if they
// shared a group of limit 1: each holds SQLite's one writer for its whole body
// (transactional.go), so a second one could only wait for it, claimed and
// with its timeout running, while the first holds the writer.
func pickCandidates(tx *sql.Tx, q string, limit int, targets []string) ([]int64, map[string]int, error) {
	txFree, err := transactionalFree(tx)
	if err != nil {
		return nil, nil, err
	}
	var cands []candidate
	for _, transactional := range []int{0, 1} {
		n := limit
		if transactional == 1 {
			if !txFree {
				continue
			}
			n = 1
		}
		served := targets
		if served == nil {
			if served, err = readyTargets(tx, readyTargetsSQL, q, transactional); err != nil {
				return nil, nil, err
			}
		}
		for _, target := range served {
			c, err := readyUngrouped(tx, q, transactional, target, n)
			if err != nil {
				return nil, nil, err
			}
			cands = append(cands, c...)
		}
	}
	served := targets
	if served == nil {
		if served, err = readyTargets(tx, readyGroupedTargetsSQL, q); err != nil {
			return nil, nil, err
		}
	}
	free, err := openGroups(tx, q, served)
	if err != nil {
		return nil, nil, err
	}
	for _, g := range free {
		for _, target := range g.targets {
			grouped, err := readyOfGroup(tx, q, target, g.name, min(g.slots, limit))
			if err != nil {
				return nil, nil, err
			}
			cands = append(cands, grouped...)
		}
	}
	slices.SortFunc(cands, func(a, b candidate) int {
		if a.before(b) {
			return -1
		}
		return 1
	})
	slots := map[string]int{}
	for _, g := range free {
		slots[g.name] = g.slots
	}
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
			if perGroup[c.group] == slots[c.group] {
				continue
			}
			perGroup[c.group]++
		}
		picked = append(picked, c.id)
	}
	return picked, perGroup, nil
}

// readyUngrouped reads the first n ready ungrouped tasks of q for target
// whose transactional flag is transactional: one range of the index.
func readyUngrouped(tx *sql.Tx, q string, transactional int, target string, n int) ([]candidate, error) {
	return scanCandidates(tx.Query(readyUngroupedSQL, q, transactional, target, n))
}

// The claim's reads of ready tasks, each one range of an index (named for
// the test of their plans, claim_plan_test.go).
const (
	readyUngroupedSQL = `SELECT id, priority, available_at, '', transactional
		FROM readpast_tasks INDEXED BY readpast_tasks_ready_target
		WHERE queue = ? AND transactional = ? AND target = ? AND state = 'pending' AND chain_wait = 0 AND delayed = 0 AND group_name IS NULL
		ORDER BY priority, available_at, id LIMIT ?`
	readyOfGroupSQL = `SELECT id, priority, available_at, group_name, transactional
		FROM readpast_tasks INDEXED BY readpast_tasks_ready_grouped_target
		WHERE queue = ? AND target = ? AND group_name = ? AND state = 'pending' AND chain_wait = 0 AND delayed = 0
		ORDER BY priority, available_at, id LIMIT ?`
	nextGroupSQL = `SELECT group_name FROM readpast_tasks INDEXED BY readpast_tasks_ready_grouped_target
		WHERE queue = ? AND target = ? AND state = 'pending' AND chain_wait = 0 AND delayed = 0 AND group_name IS NOT NULL AND group_name > ?
		ORDER BY group_name LIMIT 1`
)

// readyOfGroup reads the first n ready tasks of group g in q for target: one
// range of the index.
func readyOfGroup(tx *sql.Tx, q, target, g string, n int) ([]candidate, error) {
	return scanCandidates(tx.Query(readyOfGroupSQL, q, target, g, n))
}

// The targets with ready tasks in a queue, for a claim of any target
// (ClaimParams.Targets nil): a skip scan of a ready index, one probe per
// target, each reading the first entry after the last target found (%s: the
// first probe has no bound). The arguments are the index's columns before
// the target, then the last target found.
const (
	readyTargetsSQL = `SELECT target FROM readpast_tasks INDEXED BY readpast_tasks_ready_target
		WHERE queue = ? AND transactional = ? %s AND state = 'pending' AND chain_wait = 0 AND delayed = 0 AND group_name IS NULL
		ORDER BY target LIMIT 1`
	readyGroupedTargetsSQL = `SELECT target FROM readpast_tasks INDEXED BY readpast_tasks_ready_grouped_target
		WHERE queue = ? %s AND state = 'pending' AND chain_wait = 0 AND delayed = 0 AND group_name IS NOT NULL
		ORDER BY target LIMIT 1`
)

// readyTargets runs a skip scan of readyTargetsSQL or readyGroupedTargetsSQL.
func readyTargets(tx *sql.Tx, query string, prefix ...any) ([]string, error) {
	first, next := fmt.Sprintf(query, ""), fmt.Sprintf(query, "AND target > ?")
	var out []string
	for {
		var row *sql.Row
		if len(out) == 0 {
			row = tx.QueryRow(first, prefix...)
		} else {
			row = tx.QueryRow(next, append(slices.Clone(prefix), out[len(out)-1])...)
		}
		var target string
		err := row.Scan(&target)
		if errors.Is(err, sql.ErrNoRows) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("finding the targets of ready tasks: %w", err)
		}
		out = append(out, target)
	}
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

// openGroup is a group with ready tasks of the claim's targets and free
// slots: its free slots, and which of the targets have ready tasks in it.
type openGroup struct {
	name    string
	slots   int
	targets []string
}

// openGroups returns the groups with ready tasks in q of the given targets
// and free slots, in name order: a skip scan of the grouped index per
// target, one probe per group of that target.
func openGroups(tx *sql.Tx, q string, targets []string) ([]openGroup, error) {
	byName := map[string]*openGroup{}
	var order []string
	for _, target := range targets {
		last := ""
		for {
			var g string
			err := tx.QueryRow(nextGroupSQL, q, target, last).Scan(&g)
			if errors.Is(err, sql.ErrNoRows) {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("finding groups with ready tasks: %w", err)
			}
			last = g
			og, seen := byName[g]
			if !seen {
				slots, err := groupFree(tx, g)
				if err != nil {
					return nil, err
				}
				og = &openGroup{name: g, slots: slots}
				byName[g] = og
				order = append(order, g)
			}
			og.targets = append(og.targets, target)
		}
	}
	slices.Sort(order)
	var out []openGroup
	for _, g := range order {
		if og := byName[g]; og.slots > 0 {
			out = append(out, *og)
		}
	}
	return out, nil
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
