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
			_, err := tx.Exec(`UPDATE readpast_tasks
				SET state = 'cancelled', chain_cancelled = 1, chain_wait = 0, finished_at = ?, last_error = ?
				WHERE chain = ? AND state = 'pending' AND stage > ?`,
				now, queue.ChainCancelledError(chain, taskID, stage, st), chain, stage)
			if err != nil {
				return fmt.Errorf("cancelling later stages of chain %s: %w", chain, err)
			}
		}
	}
	return refreshChain(tx, chain)
}
