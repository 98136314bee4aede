package sqlite

import (
	"database/sql"
	"fmt"

	"readpast/internal/queue"
)

// refreshChain recomputes chain_wait for the chain's pending tasks: only the
// lowest unfinished stage may run. SQLite's single writer serialises it.
func refreshChain(tx *sql.Tx, chain string) error {
	_, err := tx.Exec(`UPDATE readpast_tasks
		SET chain_wait = (stage > (SELECT MIN(stage) FROM readpast_tasks
		                           WHERE chain = ?1 AND state IN ('pending','running')))
		WHERE chain = ?1 AND state = 'pending'`, chain)
	if err != nil {
		return fmt.Errorf("refreshing chain %s: %w", chain, err)
	}
	return nil
}

// chainEnded applies the chain failure policy after a task of the chain reached a
// final state, then refreshes the chain.
func chainEnded(tx *sql.Tx, now int64, chain string, taskID int64, stage int, st queue.State) error {
	if st == queue.StateFailed || st == queue.StateCancelled {
		var cont bool
		if err := tx.QueryRow(`SELECT continue_on_failure FROM readpast_chains WHERE name = ?`, chain).Scan(&cont); err != nil && err != sql.ErrNoRows {
			return fmt.Errorf("reading chain %s: %w", chain, err)
		}
		if !cont {
			queues, err := queryStrings(tx, `UPDATE readpast_tasks
				SET state = 'cancelled', chain_cancelled = 1, chain_wait = 0, finished_at = ?, last_error = ?
				WHERE chain = ? AND state = 'pending' AND stage > ? RETURNING queue`,
				now, queue.ChainCancelledError(chain, taskID, stage, st), chain, stage)
			if err != nil {
				return fmt.Errorf("cancelling later stages of chain %s: %w", chain, err)
			}
			for _, q := range queues {
				if err := countFinished(tx, q, queue.StateCancelled, 1); err != nil {
					return err
				}
			}
		}
	}
	return refreshChain(tx, chain)
}

// queryStrings runs a query (or a statement with RETURNING) whose one column
// is text, and returns its values.
func queryStrings(tx *sql.Tx, query string, args ...any) ([]string, error) {
	rows, err := tx.Query(query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}
