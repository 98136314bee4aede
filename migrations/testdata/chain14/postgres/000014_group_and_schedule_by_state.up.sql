-- A group's or a schedule's tasks of one state (docs/BENCHMARKS.md, "The
-- dashboard against history").
--
-- readpast_tasks_group was (group_name, id) and readpast_tasks_schedule
-- (schedule_name, id): a page of a group's pending tasks, or a schedule's
-- failed runs, read the group's or the schedule's tasks newest first and
-- filtered the state, so with few matches it read their whole history (a
-- schedule that fires every minute makes 43,000 tasks a month). With the state
-- before the id, each state is one range in id order; a page of one state
-- reads its range, and a page of every state merges the newest rows of one
-- range per state (listSQL), as the queue's list does since migration 000008.
--
-- No cost on the hot path: a claim or a finish changes the state, which
-- already makes PostgreSQL write a new entry in every index the row is in.
--
-- The file is one transaction. The new indexes are built first, under new
-- names: each build reads the table once and holds a SHARE lock, which makes
-- enqueues, claims and finishes wait while the dashboard still reads; only the
-- DROPs at the end take the table's exclusive lock, until the commit right
-- after. On a large table, run the migration when the queues are quiet.
CREATE INDEX readpast_tasks_group_state ON readpast_tasks (group_name, state, id) WHERE group_name IS NOT NULL;
CREATE INDEX readpast_tasks_schedule_state ON readpast_tasks (schedule_name, state, id) WHERE schedule_name IS NOT NULL;
DROP INDEX readpast_tasks_group;
DROP INDEX readpast_tasks_schedule;
