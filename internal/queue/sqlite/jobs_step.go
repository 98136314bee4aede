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
		jobQueue, jobName        string
		stepsRun, current        int
		currentTask              int64
		fanoutLeft, fanoutFailed int
	)
	err := tx.QueryRow(`SELECT queue, job_name, steps_run, current_step, current_task_id, fanout_left, fanout_failed
		FROM readpast_job_runs WHERE id = ? AND state = 'running'`, runID).
		Scan(&jobQueue, &jobName, &stepsRun, &current, &currentTask, &fanoutLeft, &fanoutFailed)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading run %d: %w", runID, err)
	}
	if fanoutLeft > 0 {
		// The current step fans out: its tasks are the run's tasks of that
		// step from current_task_id on (an older one is a stale task
		// retried by hand). The step ends with its last task.
		if step != current || id < currentTask {
			return nil
		}
		fanoutLeft--
		if st != queue.StateSucceeded {
			fanoutFailed++
		}
		if fanoutLeft > 0 {
			_, err := tx.Exec(`UPDATE readpast_job_runs SET fanout_left = ?, fanout_failed = ? WHERE id = ?`, fanoutLeft, fanoutFailed, runID)
			if err != nil {
				return fmt.Errorf("counting the end of task %d of run %d: %w", id, runID, err)
			}
			return nil
		}
		st = queue.StepFanOutEnd(fanoutFailed)
	} else if currentTask != id {
		return nil
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
		_, err := tx.Exec(`UPDATE readpast_job_runs SET state = ?, finished_at = ?, reason = ?, fanout_left = 0 WHERE id = ?`,
			end, now, reason, runID)
		if err != nil {
			return fmt.Errorf("ending run %d: %w", runID, err)
		}
		return nil
	}
	taskID, n, err := enqueueRunStep(tx, now, runID, next, stepsRun+1, jobQueue, plan[next], queue.StepCreatedBy(jobName))
	if err != nil {
		return err
	}
	_, err = tx.Exec(`UPDATE readpast_job_runs SET steps_run = steps_run + 1, current_step = ?, current_task_id = ?,
		fanout_left = ?, fanout_failed = 0 WHERE id = ?`, next, taskID, n, runID)
	if err != nil {
		return fmt.Errorf("moving run %d to step %d: %w", runID, next, err)
	}
	return nil
}

// enqueueRunStep enqueues plan step i of a run, its execution number n: one
// task, or one per target of a step that fans out, in the group of that
// execution with the step's limit. It returns the (first) task's id and how
// many tasks of a fan-out it enqueued (0: none, a plain step).
func enqueueRunStep(tx *sql.Tx, now int64, runID int64, i, n int, q string, s queue.PlanStep, createdBy string) (int64, int, error) {
	if len(s.Targets) == 0 {
		id, err := enqueueStep(tx, now, runID, i, q, s, createdBy)
		return id, 0, err
	}
	group := queue.FanOutStepGroup(runID, n)
	limit := s.FanOutLimit
	if limit <= 0 || limit > len(s.Targets) {
		limit = len(s.Targets)
	}
	if _, err := tx.Exec(`INSERT INTO readpast_groups (name, max_running, updated_at, updated_by) VALUES (?, ?, ?, ?)`,
		group, limit, now, createdBy); err != nil {
		return 0, 0, fmt.Errorf("making the group of step %s of run %d: %w", s.Name, runID, err)
	}
	base := queue.StepTask(q, s, createdBy)
	tasks := make([]queue.NewTask, len(s.Targets))
	for k, name := range s.Targets {
		t := base
		t.Target, t.Group = name, group
		tasks[k] = t
	}
	res, err := enqueueTx(context.Background(), tx, now, tasks)
	if err != nil {
		return 0, 0, fmt.Errorf("enqueueing step %s of run %d: %w", s.Name, runID, err)
	}
	if _, err := tx.Exec(`UPDATE readpast_tasks SET run_id = ?, run_step = ? WHERE group_name = ?`, runID, i, group); err != nil {
		return 0, 0, fmt.Errorf("marking the tasks of step %s of run %d: %w", s.Name, runID, err)
	}
	return res[0].ID, len(res), nil
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
const planColumns = `name, body, target, timeout_ms, transactional, max_attempts, retry_interval_ms, on_success, on_failure, targets, fanout_limit`

func scanStep(r scanner) (queue.PlanStep, error) {
	var (
		s                  queue.PlanStep
		timeoutMS, retryMS int64
		transactional      int
		targets            string
	)
	err := r.Scan(&s.Name, &s.Body, &s.Target, &timeoutMS, &transactional, &s.MaxAttempts, &retryMS, &s.OnSuccess, &s.OnFailure,
		&targets, &s.FanOutLimit)
	s.Targets = queue.SplitSelectors(targets)
	s.Timeout, s.RetryInterval = time.Duration(timeoutMS)*time.Millisecond, time.Duration(retryMS)*time.Millisecond
	s.Transactional = transactional != 0
	return s, err
}

// runPlan reads the plan a run started with, in step order.
func runPlan(tx *sql.Tx, runID int64) ([]queue.PlanStep, error) {
	return readPlanCtx(context.Background(), tx, `SELECT `+planColumns+` FROM readpast_run_steps WHERE run_id = ? ORDER BY step_index`, runID)
}

// reopenStepCount counts task id, of run runID's step at plan index step,
// again among its fan-out step's unfinished tasks when it is retried by hand
// while that step still waits for the others (the run's current step,
// fanout_left > 0, the task of its current execution): its end was counted,
// as failed (only a failed or cancelled task is retried), so the step would
// otherwise follow before the retried task ends, or count its new end a
// second time. A task of a step the run has left is not counted: its new end
// changes nothing (stepEnded).
func reopenStepCount(tx *sql.Tx, id, runID int64, step int) error {
	_, err := tx.Exec(`UPDATE readpast_job_runs
		SET fanout_left = fanout_left + 1, fanout_failed = max(fanout_failed - 1, 0)
		WHERE id = ? AND state = 'running' AND fanout_left > 0 AND current_step = ? AND current_task_id <= ?`,
		runID, step, id)
	if err != nil {
		return fmt.Errorf("counting task %d again in its step: %w", id, err)
	}
	return nil
}
