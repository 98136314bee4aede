package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"readpast/internal/queue"
)

// stepEnded follows a run's plan after its step task id, at plan index step,
// ended in state st: inside the transaction that records that end, it
// enqueues the next step or ends the run (queue.StepNext decides). A run
// that is no longer running, or whose current step is another task (a step
// retried by hand after its run moved on), is left as it is.
func stepEnded(tx *sql.Tx, now int64, runID int64, step int, id int64, st queue.State) error {
	var (
		jobQueue, jobName string
		stepsRun          int
	)
	err := tx.QueryRow(`SELECT queue, job_name, steps_run FROM readpast_job_runs
		WHERE id = ? AND state = 'running' AND current_task_id = ?`, runID, id).Scan(&jobQueue, &jobName, &stepsRun)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading run %d: %w", runID, err)
	}
	plan, err := runPlan(tx, runID)
	if err != nil {
		return err
	}
	if step < 0 || step >= len(plan) {
		return fmt.Errorf("run %d: step %d is not in its plan of %d steps", runID, step, len(plan))
	}
	next, end, reason := queue.StepNext(plan, step, st, stepsRun)
	if end != queue.RunRunning {
		_, err := tx.Exec(`UPDATE readpast_job_runs SET state = ?, finished_at = ?, reason = ? WHERE id = ?`,
			end, now, reason, runID)
		if err != nil {
			return fmt.Errorf("ending run %d: %w", runID, err)
		}
		return nil
	}
	taskID, err := enqueueStep(tx, now, runID, next, jobQueue, plan[next], queue.StepCreatedBy(jobName))
	if err != nil {
		return err
	}
	_, err = tx.Exec(`UPDATE readpast_job_runs SET steps_run = steps_run + 1, current_step = ?, current_task_id = ?
		WHERE id = ?`, next, taskID, runID)
	if err != nil {
		return fmt.Errorf("moving run %d to step %d: %w", runID, next, err)
	}
	return nil
}

// enqueueStep enqueues the task of plan step i of a run.
func enqueueStep(tx *sql.Tx, now int64, runID int64, i int, q string, s queue.PlanStep, createdBy string) (int64, error) {
	res, err := enqueueTx(context.Background(), tx, now, []queue.NewTask{queue.StepTask(q, s, createdBy)})
	if err != nil {
		return 0, fmt.Errorf("enqueueing step %s of run %d: %w", s.Name, runID, err)
	}
	id := res[0].ID
	_, err = tx.Exec(`UPDATE readpast_tasks SET run_id = ?, run_step = ? WHERE id = ?`, runID, i, id)
	if err != nil {
		return 0, fmt.Errorf("marking task %d as step %s of run %d: %w", id, s.Name, runID, err)
	}
	return id, nil
}

// planColumns are a plan step's columns, as scanStep reads them.
const planColumns = `name, body, target, timeout_ms, transactional, max_attempts, retry_interval_ms, on_success, on_failure`

func scanStep(r scanner) (queue.PlanStep, error) {
	var (
		s                  queue.PlanStep
		timeoutMS, retryMS int64
		transactional      int
	)
	err := r.Scan(&s.Name, &s.Body, &s.Target, &timeoutMS, &transactional, &s.MaxAttempts, &retryMS, &s.OnSuccess, &s.OnFailure)
	s.Timeout, s.RetryInterval = time.Duration(timeoutMS)*time.Millisecond, time.Duration(retryMS)*time.Millisecond
	s.Transactional = transactional != 0
	return s, err
}

// runPlan reads the plan a run started with, in step order.
func runPlan(tx *sql.Tx, runID int64) ([]queue.PlanStep, error) {
	return readPlanCtx(context.Background(), tx, `SELECT `+planColumns+` FROM readpast_run_steps WHERE run_id = ? ORDER BY step_index`, runID)
}
