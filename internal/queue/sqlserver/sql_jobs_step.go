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
//
// A step that fans out (docs/JOBS.md, "A step that fans out") has one task
// per target; while it is unfinished the run row counts its unfinished and
// failed tasks (fanout_left, fanout_failed), and its tasks are the run's
// tasks of that step from current_task_id on. Each end decrements the count
// under the run row's UPDLOCK, so two last ends on two nodes are serialised,
// the second reading the first's committed count, and only the end that
// brings it to zero follows the plan, with the step succeeded when none of
// its tasks failed (a cancelled one counts as failed).

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
DECLARE @run_current_step int;
DECLARE @run_current_task bigint;
DECLARE @fan_left int;
DECLARE @fan_failed int;
DECLARE @step_state varchar(10);
DECLARE @next_targets nvarchar(max);
DECLARE @next_limit int;
DECLARE @fan_n int;
DECLARE @fan_group nvarchar(128);
`

const stepFollow = `
    IF @run_id IS NOT NULL AND @state IN ('succeeded', 'failed', 'cancelled')
    BEGIN
        SELECT @run_queue = r.queue, @run_job = r.job_name, @steps_run = r.steps_run,
               @run_current_step = r.current_step, @run_current_task = r.current_task_id,
               @fan_left = r.fanout_left, @fan_failed = r.fanout_failed
        FROM dbo.readpast_job_runs AS r WITH (UPDLOCK, ROWLOCK)
        WHERE r.id = @run_id AND r.state = 'running';

        SET @step_state = @state;
        IF @run_queue IS NOT NULL AND @fan_left > 0
        BEGIN
            -- The current step fans out: count this end if it is one of its
            -- tasks; only the last one goes on.
            IF @run_step = @run_current_step AND @id >= @run_current_task
            BEGIN
                SET @fan_left = @fan_left - 1;
                IF @state <> 'succeeded'
                    SET @fan_failed = @fan_failed + 1;
                UPDATE dbo.readpast_job_runs WITH (ROWLOCK)
                SET fanout_left = @fan_left, fanout_failed = @fan_failed
                WHERE id = @run_id;
                SET @step_state = CASE WHEN @fan_failed > 0 THEN 'failed' ELSE 'succeeded' END;
            END;
            IF @run_step <> @run_current_step OR @id < @run_current_task OR @fan_left > 0
                SET @run_queue = NULL;
        END
        ELSE IF @run_current_task <> @id
            SET @run_queue = NULL;

        IF @run_queue IS NOT NULL
        BEGIN
            SELECT @step_name = s.name,
                   @next_step = CASE WHEN @step_state = 'succeeded' THEN s.on_success ELSE s.on_failure END
            FROM dbo.readpast_run_steps AS s
            WHERE s.run_id = @run_id AND s.step_index = @run_step;

            IF @step_state = 'cancelled'
            BEGIN
                SET @run_end = 'cancelled';
                SET @run_reason = CONCAT(N'step ', @step_name, N' was cancelled');
            END
            ELSE IF @next_step = -1
            BEGIN
                SET @run_end = 'succeeded';
                SET @run_reason = CONCAT(N'step ', @step_name, N' ', @step_state, N': quit reporting success');
            END
            ELSE IF @next_step = -2
            BEGIN
                SET @run_end = 'failed';
                SET @run_reason = CONCAT(N'step ', @step_name, N' ', @step_state, N': quit reporting failure');
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
                SELECT @next_targets = s.targets, @next_limit = s.fanout_limit
                FROM dbo.readpast_run_steps AS s
                WHERE s.run_id = @run_id AND s.step_index = @next_step;
                SET @fan_n = 0;
                IF @next_targets <> N''
                BEGIN
                    -- A fan-out: its group (queue.FanOutStepGroup), new, so
                    -- a plain INSERT of one new key, then one task per target
                    -- (new rows nobody waits on).
                    SET @fan_n = LEN(@next_targets) - LEN(REPLACE(@next_targets, N' ', N'')) + 1;
                    SET @fan_group = CONCAT(N'fanout-run', @run_id, N'-', @steps_run + 1);
                    IF @next_limit < 1 OR @next_limit > @fan_n
                        SET @next_limit = @fan_n;
                    INSERT INTO dbo.readpast_groups (name, max_running, has_free, updated_by)
                    VALUES (@fan_group, @next_limit, 1, CONCAT(N'job:', @run_job));
` + insertFanOutTasks + `
                    SELECT @next_task = MIN(t.id) FROM dbo.readpast_tasks AS t
                    WHERE t.run_id = @run_id AND t.group_name = @fan_group;
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
                END;

                UPDATE dbo.readpast_job_runs WITH (ROWLOCK)
                SET steps_run = steps_run + 1, current_step = @next_step, current_task_id = @next_task,
                    fanout_left = @fan_n, fanout_failed = 0
                WHERE id = @run_id;
            END;
        END;
    END;
`

// insertFanOutTasks inserts one task of plan step @next_step of run
// @run_id, on queue @run_queue, created by job:@run_job, per target name of
// the space-separated @next_targets (target names hold no space, quote or
// backslash: queue.CheckTargetName), in group @fan_group, in the order the
// names are listed (OPENJSON numbers an array's elements from 0, [key]).
const insertFanOutTasks = `
                    INSERT INTO dbo.readpast_tasks WITH (ROWLOCK)
                        (queue, body, max_attempts, timeout_ms, transactional, created_by, run_id, run_step, retry_interval_ms,
                         target, group_name)
                    SELECT @run_queue, s.body, s.max_attempts, s.timeout_ms, s.transactional, CONCAT(N'job:', @run_job),
                           @run_id, @next_step, NULLIF(s.retry_interval_ms, 0), x.value, @fan_group
                    FROM dbo.readpast_run_steps AS s
                    CROSS APPLY OPENJSON(CONCAT(N'["', REPLACE(@next_targets, N' ', N'","'), N'"]')) AS x
                    WHERE s.run_id = @run_id AND s.step_index = @next_step
                    ORDER BY CAST(x.[key] AS int);
`
