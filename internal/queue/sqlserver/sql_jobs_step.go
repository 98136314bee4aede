package sqlserver

// The end of a run's step task (docs/JOBS.md): the batches that end a task
// (finishCore, cancelBatch) run stepFollow in their own transaction, after
// the task's row, so the next step is enqueued, or the run ended, with the
// end of the step: a node that dies between two steps can neither skip nor
// double one. It follows queue.StepNext's rules.
//
// It reads @id, @state (the task's state after the end), @now, @run_id and
// @run_step (the task's; NULL for a task of no run).
//
// Lock order: ... the task row (held) -> the run row. The run row is taken
// WITH (UPDLOCK, ROWLOCK): UPDLOCK so two ends of one run's tasks (a step and
// a stale task of it retried by hand) are serialised on it and the second
// reads the first's committed current_task_id; ROWLOCK so only that row is
// taken ("Table Hints (Transact-SQL)"). CancelRun takes the run's current
// task before the run, in this order.

const stepDeclarations = `
DECLARE @run_id bigint;
DECLARE @run_step int;
DECLARE @retry_interval_ms bigint;
DECLARE @retry_cap_ms bigint;
DECLARE @run_queue nvarchar(64);
DECLARE @run_job nvarchar(64);
DECLARE @steps_run int;
DECLARE @step_name nvarchar(128);
DECLARE @next_step int;
DECLARE @run_end varchar(10);
DECLARE @run_reason nvarchar(4000);
DECLARE @next_task bigint;
`

const stepFollow = `
    IF @run_id IS NOT NULL AND @state IN ('succeeded', 'failed', 'cancelled')
    BEGIN
        SELECT @run_queue = r.queue, @run_job = r.job_name, @steps_run = r.steps_run
        FROM dbo.readpast_job_runs AS r WITH (UPDLOCK, ROWLOCK)
        WHERE r.id = @run_id AND r.state = 'running' AND r.current_task_id = @id;

        IF @run_queue IS NOT NULL
        BEGIN
            SELECT @step_name = s.name,
                   @next_step = CASE WHEN @state = 'succeeded' THEN s.on_success ELSE s.on_failure END
            FROM dbo.readpast_run_steps AS s
            WHERE s.run_id = @run_id AND s.step_index = @run_step;

            IF @state = 'cancelled'
            BEGIN
                SET @run_end = 'cancelled';
                SET @run_reason = CONCAT(N'step ', @step_name, N' was cancelled');
            END
            ELSE IF @next_step = -1
            BEGIN
                SET @run_end = 'succeeded';
                SET @run_reason = CONCAT(N'step ', @step_name, N' ', @state, N': quit reporting success');
            END
            ELSE IF @next_step = -2
            BEGIN
                SET @run_end = 'failed';
                SET @run_reason = CONCAT(N'step ', @step_name, N' ', @state, N': quit reporting failure');
            END
            ELSE IF @steps_run >= 1000 -- queue.MaxStepExecutions
            BEGIN
                SET @run_end = 'failed';
                SET @run_reason = N'stopped after 1000 step executions: the flow''s go-to actions loop without reaching a quit';
            END;

            IF @run_end IS NOT NULL
            BEGIN
                UPDATE dbo.readpast_job_runs WITH (ROWLOCK)
                SET state = @run_end, finished_at = @now, reason = @run_reason
                WHERE id = @run_id;
            END
            ELSE
            BEGIN
                -- The next step's task: a new row nobody waits on.
                INSERT INTO dbo.readpast_tasks WITH (ROWLOCK)
                    (queue, body, max_attempts, timeout_ms, transactional, created_by, run_id, run_step, retry_interval_ms, target)
                SELECT @run_queue, s.body, s.max_attempts, s.timeout_ms, s.transactional, CONCAT(N'job:', @run_job),
                       @run_id, @next_step, NULLIF(s.retry_interval_ms, 0), s.target
                FROM dbo.readpast_run_steps AS s
                WHERE s.run_id = @run_id AND s.step_index = @next_step;
                SET @next_task = SCOPE_IDENTITY();

                UPDATE dbo.readpast_job_runs WITH (ROWLOCK)
                SET steps_run = steps_run + 1, current_step = @next_step, current_task_id = @next_task
                WHERE id = @run_id;
            END;
        END;
    END;
`
