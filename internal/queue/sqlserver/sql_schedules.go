package sqlserver

// Schedules (docs/SCHEDULES.md).
//
// Lock order: a transaction that locks a schedule row locks it first, before
// anything the enqueue batch takes (steps 1 to 5 of the package's order), and
// only schedule operations lock schedule rows, so they add no cycle. Reading
// the state of a schedule's latest run (one task, by its clustered key) takes
// at most a shared lock for that statement: a finisher holding that task waits
// for nothing a schedule operation holds.
//
// Hints and why:
//   - UPDLOCK, READPAST, ROWLOCK on the schedule row a fire takes: the U lock
//     holds it to the end of the fire's transaction, and a second scheduler
//     with the same plan reads past it instead of waiting (a firer never waits
//     for another). ROWLOCK: READPAST skips row locks only.
//   - UPDLOCK, ROWLOCK (no READPAST) on the row a Run now takes: an operator's
//     action waits for a fire or an edit in progress, then sees its result.
//   - ROWLOCK on the writes: one schedule row, one task row.
//   - The updates and deletes of a definition are compare-and-set on version:
//     no lock is held between the read of the schedule and its write.

// scheduleColumns are the readpast_schedules columns scanSchedule reads, with
// the latest run's state and end from readpast_tasks t.
const scheduleColumns = `s.id, s.name, s.cron, s.time_zone, s.queue, s.body, s.priority, s.group_name,
       s.max_attempts, s.timeout_ms, s.transactional, s.paused, s.overlap, s.misfire, s.version,
       s.next_fire_at, s.last_fire_at, s.last_fire_outcome, s.last_fire_missed, s.last_task_id,
       t.state, t.finished_at, s.created_at, s.created_by, s.updated_at, s.updated_by, s.target, COALESCE(s.job_name, N''),
       s.targets, s.fanout_limit`

// defParams are the parameters of a schedule definition, scheduleDefArgs's.
var defParams = []string{"cron", "time_zone", "queue", "body", "priority", "group_name", "max_attempts",
	"timeout_ms", "transactional", "paused", "overlap", "misfire", "next_fire_at", "target", "targets", "fanout_limit"}

// schedulesQuery reads every schedule, or the one named (@name NULL: all),
// each with its latest run: one seek of the clustered key per schedule
// (OUTER APPLY), never a join that could scan the history.
var schedulesQuery = query{
	name: "schedules",
	text: readCommitted + `SET NOCOUNT ON;
SELECT ` + scheduleColumns + `
FROM dbo.readpast_schedules AS s
OUTER APPLY (
    SELECT r.state, r.finished_at
    FROM dbo.readpast_tasks AS r
    WHERE r.id = s.last_task_id
) AS t
WHERE @name IS NULL OR s.name = @name
ORDER BY s.name;
`,
	params: []string{"name"},
}

// createScheduleBatch inserts a schedule and its audit row. A taken name fails
// on readpast_schedules_name_uq (2627).
var createScheduleBatch = query{
	name: "create-schedule",
	text: readCommitted + `SET NOCOUNT ON;
SET XACT_ABORT ON;
BEGIN TRAN;

INSERT INTO dbo.readpast_schedules
    (name, cron, time_zone, queue, body, priority, group_name, max_attempts, timeout_ms,
     transactional, paused, overlap, misfire, next_fire_at, target, created_by, updated_by, job_name,
     targets, fanout_limit)
VALUES
    (@name, @cron, @time_zone, @queue, @body, @priority, @group_name, @max_attempts, @timeout_ms,
     @transactional, @paused, @overlap, @misfire, @next_fire_at, @target, @actor, @actor, @job_name,
     @targets, @fanout_limit);

INSERT INTO dbo.readpast_audit (actor, action, target, detail)
VALUES (@actor, N'create_schedule', CONCAT(N'schedule ', @name), @detail);

COMMIT TRAN;
`,
	params: append([]string{"name", "actor", "detail", "job_name"}, defParams...),
}

// replaceScheduleBatch writes a new definition only at the version read, and
// its audit row; it answers 1 when it wrote, 0 when the schedule changed (or
// went) meanwhile.
var replaceScheduleBatch = query{
	name: "replace-schedule",
	text: readCommitted + `SET NOCOUNT ON;
SET XACT_ABORT ON;
BEGIN TRAN;

DECLARE @changed int;

UPDATE dbo.readpast_schedules WITH (ROWLOCK)
SET cron = @cron,
    time_zone = @time_zone,
    queue = @queue,
    body = @body,
    priority = @priority,
    group_name = @group_name,
    max_attempts = @max_attempts,
    timeout_ms = @timeout_ms,
    transactional = @transactional,
    paused = @paused,
    overlap = @overlap,
    misfire = @misfire,
    next_fire_at = @next_fire_at,
    target = @target,
    targets = @targets,
    fanout_limit = @fanout_limit,
    version = version + 1,
    updated_at = SYSUTCDATETIME(),
    updated_by = @actor
WHERE id = @id
  AND version = @version;

SET @changed = @@ROWCOUNT;

IF @changed = 1
BEGIN
    INSERT INTO dbo.readpast_audit (actor, action, target, detail)
    VALUES (@actor, @action, CONCAT(N'schedule ', @name), @detail);
END;

COMMIT TRAN;

SELECT @changed;
`,
	params: append([]string{"id", "version", "name", "actor", "action", "detail"}, defParams...),
}

// deleteScheduleBatch deletes a schedule and writes its audit row; it answers
// how many it deleted (0 or 1).
var deleteScheduleBatch = query{
	name: "delete-schedule",
	text: readCommitted + `SET NOCOUNT ON;
SET XACT_ABORT ON;
BEGIN TRAN;

DECLARE @deleted int;

DELETE FROM dbo.readpast_schedules WITH (ROWLOCK)
WHERE name = @name;

SET @deleted = @@ROWCOUNT;

IF @deleted = 1
BEGIN
    INSERT INTO dbo.readpast_audit (actor, action, target, detail)
    VALUES (@actor, N'delete_schedule', CONCAT(N'schedule ', @name), N'');
END;

COMMIT TRAN;

SELECT @deleted;
`,
	params: []string{"name", "actor"},
}

// runColumns are the columns of schedule row s that scanRun reads, before any
// extra ones.
const runColumns = `s.id, s.name, s.queue, s.body, s.priority, s.group_name, s.max_attempts, s.timeout_ms,
       s.transactional, COALESCE(s.last_task_id, 0), s.target, COALESCE(s.job_name, N''), s.targets, s.fanout_limit`

// unfinishedLastRun is true when schedule row s's latest run is pending or running.
// A job's schedule's latest run is its job's: a Run now counts too. A
// fan-out's run is every task of its group: at most queue.MaxFanOut rows of
// readpast_tasks_group_state (the IS NOT NULL repeats the filtered index's
// predicate, so a parameterized plan may use it), read under READ COMMITTED
// with shared locks held per row, not to the end of the transaction.
const unfinishedLastRun = `(EXISTS (
           SELECT 1
           FROM dbo.readpast_tasks AS t
           WHERE t.id = s.last_task_id
             AND t.state IN ('pending', 'running'))
       OR (s.targets <> N'' AND EXISTS (
           SELECT 1
           FROM dbo.readpast_tasks AS l
           JOIN dbo.readpast_tasks AS t ON t.group_name = l.group_name
           WHERE l.id = s.last_task_id
             AND l.group_name IS NOT NULL
             AND t.group_name IS NOT NULL
             AND t.state IN ('pending', 'running')))
       OR EXISTS (
           SELECT 1
           FROM dbo.readpast_jobs AS j
           JOIN dbo.readpast_job_runs AS r ON r.id = j.last_run_id
           WHERE j.name = s.job_name
             AND r.state = 'running'))`

// runLockQuery locks the named schedule's row for a Run now (inside the
// transaction RunSchedule began) and says whether the overlap policy skips it.
var runLockQuery = query{
	name: "run-schedule-lock",
	text: readCommitted + `SET NOCOUNT ON;
SELECT ` + runColumns + `,
       CAST(CASE WHEN s.overlap = 'skip' AND ` + unfinishedLastRun + ` THEN 1 ELSE 0 END AS bit)
FROM dbo.readpast_schedules AS s WITH (UPDLOCK, ROWLOCK)
WHERE s.name = @name;
`,
	params: []string{"name"},
}

// fireBatch makes a fire's compare-and-set inside the transaction
// FireSchedule began: it locks the schedule row only at the version planned,
// reading past it if another transaction holds it, decides the outcome, moves
// the row to the next fire time, and returns the template of the task (no row:
// not this scheduler's fire).
var fireBatch = query{
	name: "fire-schedule",
	text: readCommitted + `SET NOCOUNT ON;
SET XACT_ABORT ON;

DECLARE @outcome varchar(16);

SELECT @outcome = CASE WHEN @skip_missed = 1 THEN 'skipped_misfire'
                       WHEN s.overlap = 'skip' AND ` + unfinishedLastRun + ` THEN 'skipped_overlap'
                       ELSE 'enqueued' END
FROM dbo.readpast_schedules AS s WITH (UPDLOCK, READPAST, ROWLOCK)
WHERE s.id = @id
  AND s.version = @version
  AND s.paused = 0
  AND (s.last_fire_at IS NULL OR s.last_fire_at < @fire_at);

-- The update compares the version again: under the U lock it always
-- matches on SQL Server; where the hints are ignored (Babelfish) it is what
-- keeps a second firer of the same plan out, after waiting for the first.
IF @outcome IS NOT NULL
BEGIN
    UPDATE dbo.readpast_schedules WITH (ROWLOCK)
    SET version = version + 1,
        next_fire_at = @next,
        last_fire_at = @fire_at,
        last_fire_missed = @missed,
        last_fire_outcome = @outcome
    WHERE id = @id
      AND version = @version;
    IF @@ROWCOUNT = 0
        SET @outcome = NULL;
END;

SELECT ` + runColumns + `, s.last_fire_outcome
FROM dbo.readpast_schedules AS s
WHERE s.id = @id
  AND @outcome IS NOT NULL;
`,
	params: []string{"id", "version", "fire_at", "missed", "skip_missed", "next"},
}

// linkRunBatch marks a run's new task as the schedule's (@fire_at NULL for a
// Run now) and makes it the schedule's latest run.
var linkRunBatch = query{
	name: "link-schedule-run",
	text: readCommitted + `SET NOCOUNT ON;
UPDATE dbo.readpast_tasks WITH (ROWLOCK)
SET schedule_name = @name,
    fire_at = @fire_at
WHERE id = @task_id;

UPDATE dbo.readpast_schedules WITH (ROWLOCK)
SET last_task_id = @task_id
WHERE id = @id;
`,
	params: []string{"id", "name", "task_id", "fire_at"},
}

// fanOutGroupBatch creates a fire's fan-out group with its limit inside the
// fire's transaction (not audited, as the fire is not: its tasks say who
// made them), before the enqueue batch (which then finds
// the group and creates none). The name is new (queue.NewFanOutGroup): a
// plain INSERT takes the X lock of its one new key and no key range, so it
// waits for no one; it is a group row, step 3 of the package's lock order,
// taken after the schedule row as every fire's locks are.
var fanOutGroupBatch = query{
	name: "fanout-group",
	text: readCommitted + `SET NOCOUNT ON;
INSERT INTO dbo.readpast_groups (name, max_running, has_free, updated_by)
VALUES (@group_name, @max_running, CASE WHEN @max_running > 0 THEN 1 ELSE 0 END, @actor);
`,
	params: []string{"group_name", "max_running", "actor"},
}

// linkFanOutBatch marks every task of a fire's fan-out group as the
// schedule's (@fire_at NULL for a Run now) and makes @task_id, its first, the
// schedule's latest run. ROWLOCK: the group's tasks (at most queue.MaxFanOut,
// created by this transaction, so already X-locked by it) and one schedule row.
var linkFanOutBatch = query{
	name: "link-schedule-fanout",
	text: readCommitted + `SET NOCOUNT ON;
UPDATE dbo.readpast_tasks WITH (ROWLOCK)
SET schedule_name = @name,
    fire_at = @fire_at
WHERE group_name = @group_name
  AND group_name IS NOT NULL;

UPDATE dbo.readpast_schedules WITH (ROWLOCK)
SET last_task_id = @task_id
WHERE id = @id;
`,
	params: []string{"id", "name", "task_id", "fire_at", "group_name"},
}

// runAuditBatch records a Run now.
var runAuditBatch = query{
	name: "run-schedule-audit",
	text: readCommitted + `SET NOCOUNT ON;
INSERT INTO dbo.readpast_audit (actor, action, target, detail)
VALUES (@actor, N'run_schedule', CONCAT(N'schedule ', @name), CONCAT(N'task ', @task_id));
`,
	params: []string{"actor", "name", "task_id"},
}

// dueSchedulesQuery reads up to @limit schedules due at @at (NULL: the
// database clock), soonest first, by readpast_schedules_due, and the soonest
// next fire time after it; it always answers one row at least (the time).
// It locks nothing: the fire that follows is a compare-and-set.
var dueSchedulesQuery = query{
	name: "due-schedules",
	text: readCommitted + `SET NOCOUNT ON;
DECLARE @now datetime2(6) = COALESCE(@at, SYSUTCDATETIME());

SELECT @now AS now_utc,
       (SELECT MIN(x.next_fire_at)
        FROM dbo.readpast_schedules AS x
        WHERE x.next_fire_at > @now) AS next_after,
       d.id, d.name, d.cron, d.time_zone, d.misfire, d.version, d.next_fire_at, d.last_fire_at,
       d.targets, d.fanout_limit, d.job_name
FROM (VALUES (1)) AS one (n)
OUTER APPLY (
    SELECT TOP (@limit) s.id, s.name, s.cron, s.time_zone, s.misfire, s.version, s.next_fire_at, s.last_fire_at,
           s.targets, s.fanout_limit, s.job_name
    FROM dbo.readpast_schedules AS s
    WHERE s.next_fire_at <= @now
    ORDER BY s.next_fire_at
) AS d
ORDER BY d.next_fire_at;
`,
	params: []string{"at", "limit"},
}
