package sqlserver

// Jobs and their runs (docs/JOBS.md); the end of a step is stepFollow
// (sql_jobs_step.go).
//
// Lock order of the jobs' batches, after the baseline's (doc.go): the job row
// -> (rows they create) for a run's start; the run's current task -> the run
// row for a cancel, as a step's end takes them. UPDLOCK on the job row
// serialises two starts of one job, so the second reads the first's run
// ("Table Hints (Transact-SQL)": UPDLOCK takes update locks held to the end
// of the transaction); ROWLOCK keeps it to that row.

const jobStepsJSON = `OPENJSON(@steps) WITH (
    step_index        int           '$.step_index',
    name              nvarchar(128) '$.name',
    body              nvarchar(max) '$.body',
    target            nvarchar(64)  '$.target',
    timeout_ms        bigint        '$.timeout_ms',
    transactional     bit           '$.transactional',
    max_attempts      int           '$.max_attempts',
    retry_interval_ms bigint        '$.retry_interval_ms',
    on_success        int           '$.on_success',
    on_failure        int           '$.on_failure',
    targets           nvarchar(max) '$.targets',
    fanout_limit      int           '$.fanout_limit'
) AS x`

const insertJobSteps = `
INSERT INTO dbo.readpast_job_steps (job_id, step_index, name, body, target, timeout_ms, transactional,
    max_attempts, retry_interval_ms, on_success, on_failure, targets, fanout_limit)
SELECT @job_id, x.step_index, x.name, x.body, x.target, x.timeout_ms, x.transactional,
       x.max_attempts, x.retry_interval_ms, x.on_success, x.on_failure, COALESCE(x.targets, N''), COALESCE(x.fanout_limit, 0)
FROM ` + jobStepsJSON + `;
`

var jobDefParams = []string{"name", "description", "category", "owner", "enabled", "queue", "overlap", "definition",
	"actor", "detail", "steps"}

// createJobBatch inserts a job and its plan, audited; a taken name fails on
// the unique key (2627).
var createJobBatch = query{
	name: "create-job",
	text: readCommitted + `SET NOCOUNT ON;
SET XACT_ABORT ON;
DECLARE @job_id bigint;
BEGIN TRAN;

INSERT INTO dbo.readpast_jobs (name, description, category, owner, enabled, queue, overlap, definition, updated_by)
VALUES (@name, @description, @category, @owner, @enabled, @queue, @overlap, @definition, @actor);
SET @job_id = SCOPE_IDENTITY();
` + insertJobSteps + `
INSERT INTO dbo.readpast_audit (actor, action, target, detail)
VALUES (@actor, N'create_job', CONCAT(N'job ', @name), @detail);

COMMIT TRAN;
`,
	params: jobDefParams,
}

// replaceJobBatch writes a job's definition and plan over the old ones,
// audited; it answers the job's id, NULL when there is no such job. Runs
// keep the plan they copied.
var replaceJobBatch = query{
	name: "replace-job",
	text: readCommitted + `SET NOCOUNT ON;
SET XACT_ABORT ON;
DECLARE @job_id bigint;
BEGIN TRAN;

SELECT @job_id = j.id FROM dbo.readpast_jobs AS j WITH (UPDLOCK, ROWLOCK) WHERE j.name = @name;

IF @job_id IS NOT NULL
BEGIN
    UPDATE dbo.readpast_jobs WITH (ROWLOCK)
    SET description = @description, category = @category, owner = @owner, enabled = @enabled, queue = @queue,
        overlap = @overlap, definition = @definition, version = version + 1, updated_at = SYSUTCDATETIME(),
        updated_by = @actor
    WHERE id = @job_id;
    DELETE FROM dbo.readpast_job_steps WHERE job_id = @job_id;
` + insertJobSteps + `
    INSERT INTO dbo.readpast_audit (actor, action, target, detail)
    VALUES (@actor, N'update_job', CONCAT(N'job ', @name), @detail);
END;

COMMIT TRAN;
SELECT @job_id AS job_id;
`,
	params: jobDefParams,
}

const jobColumns = `j.id, j.name, j.description, j.category, j.owner, j.enabled, j.queue, j.overlap, j.definition,
       j.version, j.created_at, j.updated_at, j.updated_by`

const jobRunColumns = `r.id, r.job_name, r.state, r.trigger_kind, r.start_step, r.created_by, r.started_at, r.finished_at,
       r.steps_run, r.current_step, r.current_task_id, r.reason`

const planColumns = `name, body, target, timeout_ms, transactional, max_attempts, retry_interval_ms, on_success, on_failure, targets, fanout_limit`

// jobsQuery reads every job, or the one named, with its latest run by key.
var jobsQuery = query{
	name: "jobs",
	text: readCommitted + `SELECT ` + jobColumns + `, ` + jobRunColumns + `
FROM dbo.readpast_jobs AS j
LEFT JOIN dbo.readpast_job_runs AS r ON r.id = j.last_run_id
WHERE @name IS NULL OR j.name = @name
ORDER BY j.name;
`,
	params: []string{"name"},
}

// jobStepsQuery reads a job's plan.
var jobStepsQuery = query{
	name: "job-steps",
	text: readCommitted + `SELECT ` + planColumns + `
FROM dbo.readpast_job_steps
WHERE job_id = @job_id
ORDER BY step_index;
`,
	params: []string{"job_id"},
}

// deleteJobBatch deletes a job (its plan by cascade), audited; it answers
// how many it deleted.
var deleteJobBatch = query{
	name: "delete-job",
	text: readCommitted + `SET NOCOUNT ON;
SET XACT_ABORT ON;
DECLARE @n int;
BEGIN TRAN;
-- The job's schedules first: a fire locks its schedule's row before the job's.
DELETE FROM dbo.readpast_schedules WHERE job_name = @name;
DELETE FROM dbo.readpast_jobs WHERE name = @name;
SET @n = @@ROWCOUNT;
IF @n > 0
    INSERT INTO dbo.readpast_audit (actor, action, target, detail)
    VALUES (@actor, N'delete_job', CONCAT(N'job ', @name), N'');
COMMIT TRAN;
SELECT @n AS deleted;
`,
	params: []string{"name", "actor"},
}

// startRunBatch starts a run: the job's queue row first, in a transaction of
// its own as enqueueBatch makes it (a second inserter fails on the key and
// the batch runs again); then the job row under UPDLOCK, the overlap check,
// the run, a copy of the plan, the first step's task, audited. It answers
// the job (NULL: none), whether it was busy with its latest run, the plan's
// size and the new run and task.
var startRunBatch = query{
	name: "start-run",
	text: readCommitted + `SET NOCOUNT ON;
SET XACT_ABORT ON;
DECLARE @job_id bigint;
DECLARE @queue nvarchar(64);
DECLARE @last_run bigint;
DECLARE @busy bit = 0;
DECLARE @steps int;
DECLARE @run_id bigint;
DECLARE @task_id bigint;
DECLARE @unresolved nvarchar(128);
DECLARE @run_queue nvarchar(64);
DECLARE @run_job nvarchar(64) = @job;
DECLARE @next_step int = @from;
DECLARE @next_targets nvarchar(max);
DECLARE @next_limit int;
DECLARE @fan_n int = 0;
DECLARE @fan_group nvarchar(128);

SELECT @queue = j.queue FROM dbo.readpast_jobs AS j WHERE j.name = @job;
IF @queue IS NOT NULL AND NOT EXISTS (SELECT 1 FROM dbo.readpast_queues AS q WHERE q.name = @queue)
BEGIN
    BEGIN TRAN;
    INSERT INTO dbo.readpast_queues (name)
    SELECT @queue WHERE NOT EXISTS (SELECT 1 FROM dbo.readpast_queues AS q WHERE q.name = @queue);
    COMMIT TRAN;
END;

BEGIN TRAN;

SELECT @job_id = j.id
FROM dbo.readpast_jobs AS j WITH (UPDLOCK, ROWLOCK)
WHERE j.name = @job;

-- A statement of its own after the lock: under READ_COMMITTED_SNAPSHOT its
-- snapshot then holds the run of a start that held the lock before.
SELECT @queue = j.queue, @last_run = j.last_run_id,
       @busy = CASE WHEN (j.overlap = 'skip' OR @only_if_idle = 1)
                     AND EXISTS (SELECT 1 FROM dbo.readpast_job_runs AS r WHERE r.id = j.last_run_id AND r.state = 'running')
                    THEN 1 ELSE 0 END
FROM dbo.readpast_jobs AS j
WHERE j.id = @job_id;

SELECT @steps = COUNT(*) FROM dbo.readpast_job_steps WHERE job_id = @job_id;

-- A step that fans out needs the target names the starting node resolved
-- (@run_targets: a JSON array of them by plan index, space-separated).
SELECT TOP (1) @unresolved = s.name
FROM dbo.readpast_job_steps AS s
LEFT JOIN OPENJSON(@run_targets) AS x ON CAST(x.[key] AS int) = s.step_index
WHERE s.job_id = @job_id AND s.targets <> N'' AND COALESCE(x.value, N'') = N'';

IF @job_id IS NOT NULL AND @busy = 0 AND @from >= 0 AND @from < @steps AND @unresolved IS NULL
BEGIN
    INSERT INTO dbo.readpast_job_runs (job_id, job_name, queue, trigger_kind, start_step, created_by, current_step, current_task_id)
    VALUES (@job_id, @job, @queue, @trigger, @from, @actor, @from, 0);
    SET @run_id = SCOPE_IDENTITY();

    INSERT INTO dbo.readpast_run_steps (run_id, step_index, ` + planColumns + `)
    SELECT @run_id, s.step_index, s.name, s.body, s.target, s.timeout_ms, s.transactional, s.max_attempts,
           s.retry_interval_ms, s.on_success, s.on_failure, COALESCE(x.value, N''), s.fanout_limit
    FROM dbo.readpast_job_steps AS s
    LEFT JOIN OPENJSON(@run_targets) AS x ON CAST(x.[key] AS int) = s.step_index
    WHERE s.job_id = @job_id;

    SELECT @next_targets = s.targets, @next_limit = s.fanout_limit
    FROM dbo.readpast_run_steps AS s
    WHERE s.run_id = @run_id AND s.step_index = @from;
    IF @next_targets <> N''
    BEGIN
        -- The first step fans out: its group, new (queue.FanOutStepGroup),
        -- and one task per target, as stepFollow makes them.
        SET @run_queue = @queue;
        SET @fan_n = LEN(@next_targets) - LEN(REPLACE(@next_targets, N' ', N'')) + 1;
        SET @fan_group = CONCAT(N'fanout-run', @run_id, N'-1');
        IF @next_limit < 1 OR @next_limit > @fan_n
            SET @next_limit = @fan_n;
        INSERT INTO dbo.readpast_groups (name, max_running, has_free, updated_by)
        VALUES (@fan_group, @next_limit, 1, @created_by);
` + insertFanOutTasks + `
        SELECT @task_id = MIN(t.id) FROM dbo.readpast_tasks AS t
        WHERE t.run_id = @run_id AND t.group_name = @fan_group;
    END
    ELSE
    BEGIN
        INSERT INTO dbo.readpast_tasks WITH (ROWLOCK)
            (queue, body, max_attempts, timeout_ms, transactional, created_by, run_id, run_step, retry_interval_ms, target)
        SELECT @queue, s.body, s.max_attempts, s.timeout_ms, s.transactional, @created_by, @run_id, @from,
               NULLIF(s.retry_interval_ms, 0), s.target
        FROM dbo.readpast_run_steps AS s
        WHERE s.run_id = @run_id AND s.step_index = @from;
        SET @task_id = SCOPE_IDENTITY();
    END;

    UPDATE dbo.readpast_job_runs WITH (ROWLOCK) SET current_task_id = @task_id, fanout_left = @fan_n WHERE id = @run_id;
    UPDATE dbo.readpast_jobs WITH (ROWLOCK) SET last_run_id = @run_id WHERE id = @job_id;

    INSERT INTO dbo.readpast_audit (actor, action, target, detail)
    VALUES (@actor, N'run_job', CONCAT(N'job ', @job), @detail);
END;

COMMIT TRAN;
SELECT @job_id AS job_id, @busy AS busy, @last_run AS last_run, @steps AS steps, @run_id AS run_id, @task_id AS task_id,
       @unresolved AS unresolved;
`,
	params: []string{"job", "only_if_idle", "from", "trigger", "actor", "created_by", "detail", "run_targets"},
}

// cancelRunBatch cancels a running run: its current task locked first
// (UPDLOCK, as a step's end holds it), then the run (UPDLOCK); the run ends
// cancelled, then cancelCore cancels the task, whose stepFollow finds the run
// ended. moved = 1 when the run went on to its next step in between: nothing
// changed, and the caller runs the batch again.
var cancelRunBatch = query{
	name: "cancel-run",
	text: readCommitted + `SET NOCOUNT ON;
SET XACT_ABORT ON;
DECLARE @id bigint;
DECLARE @locked bigint;
DECLARE @run_state varchar(10);
DECLARE @current bigint;
DECLARE @moved bit = 0;
DECLARE @cancel bit = 0;
BEGIN TRAN;

SELECT @id = r.current_task_id FROM dbo.readpast_job_runs AS r WHERE r.id = @cancel_run;
IF @id IS NOT NULL
BEGIN
    SELECT @locked = t.id FROM dbo.readpast_tasks AS t WITH (UPDLOCK, ROWLOCK) WHERE t.id = @id;
    SELECT @run_state = r.state, @current = r.current_task_id
    FROM dbo.readpast_job_runs AS r WITH (UPDLOCK, ROWLOCK)
    WHERE r.id = @cancel_run;
    IF @run_state = 'running' AND @current <> @id
        SET @moved = 1;
    ELSE IF @run_state = 'running'
    BEGIN
        UPDATE dbo.readpast_job_runs WITH (ROWLOCK)
        SET state = 'cancelled', finished_at = SYSUTCDATETIME(), reason = @reason
        WHERE id = @cancel_run;
        INSERT INTO dbo.readpast_audit (actor, action, target, detail)
        VALUES (@actor, N'cancel_run', CONCAT(N'run ', @cancel_run), CONCAT(N'task ', @id));
        SET @cancel = 1;
    END;
END;

IF @cancel = 1
BEGIN
` + cancelCore + `
END;

COMMIT TRAN;
SELECT @id AS task_id, @run_state AS run_state, @moved AS moved;
`,
	params: []string{"cancel_run", "actor", "reason"},
}

// runFanOutTasksQuery lists the unfinished tasks of a cancelled run's step
// that fans out after its first (current_task_id), by the index of run
// steps: at most queue.MaxFanOut rows.
var runFanOutTasksQuery = query{
	name: "run-fanout-tasks",
	text: readCommitted + `SELECT t.id
FROM dbo.readpast_job_runs AS r
JOIN dbo.readpast_tasks AS t ON t.run_id = r.id AND t.id > r.current_task_id AND t.run_step = r.current_step
WHERE r.id = @run_id AND r.fanout_left > 0 AND t.state IN ('pending', 'running')
ORDER BY t.id;
`,
	params: []string{"run_id"},
}

// runQuery reads one run.
var runQuery = query{
	name: "run",
	text: readCommitted + `SELECT ` + jobRunColumns + `
FROM dbo.readpast_job_runs AS r
WHERE r.id = @run_id;
`,
	params: []string{"run_id"},
}

// runStepsQuery reads a run's step executions (at most
// queue.MaxStepExecutions tasks) by the index of run steps.
var runStepsQuery = query{
	name: "run-steps",
	text: readCommitted + `SELECT t.id, t.run_step, p.name, t.state, t.attempts, t.started_at, t.finished_at, t.last_error, t.target
FROM dbo.readpast_tasks AS t
JOIN dbo.readpast_run_steps AS p ON p.run_id = t.run_id AND p.step_index = t.run_step
WHERE t.run_id = @run_id
ORDER BY t.id;
`,
	params: []string{"run_id"},
}

// runsQuery reads one keyset page of a job's runs, newest first.
var runsQuery = query{
	name: "runs",
	text: readCommitted + `SELECT TOP (@limit) ` + jobRunColumns + `
FROM dbo.readpast_job_runs AS r
WHERE r.job_id = (SELECT j.id FROM dbo.readpast_jobs AS j WHERE j.name = @job) AND r.id < @before
ORDER BY r.id DESC;
`,
	params: []string{"limit", "job", "before"},
}

// purgeRunsBatch deletes up to @batch ended runs finished before @cutoff
// (their plans by cascade). UPDLOCK, READPAST, ROWLOCK: a run another
// transaction holds (a cancel) is skipped rather than waited for, and the
// DELETE checks the state again.
var purgeRunsBatch = query{
	name: "purge-runs",
	text: readCommitted + `SET NOCOUNT ON;
SET XACT_ABORT ON;
BEGIN TRAN;

DECLARE @old TABLE (id bigint NOT NULL PRIMARY KEY);
DECLARE @n int;

INSERT INTO @old (id)
SELECT TOP (@batch) r.id
FROM dbo.readpast_job_runs AS r WITH (UPDLOCK, READPAST, ROWLOCK)
WHERE r.state <> 'running'
  AND r.finished_at < @cutoff
ORDER BY r.finished_at;

DELETE r
FROM dbo.readpast_job_runs AS r WITH (ROWLOCK)
WHERE r.id IN (SELECT o.id FROM @old AS o)
  AND r.state <> 'running';
SET @n = @@ROWCOUNT;

COMMIT TRAN;
SELECT @n AS deleted;
`,
	params: []string{"batch", "cutoff"},
}
