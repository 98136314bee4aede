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
-- range per state (sqlite/read.go), as the log's page of a queue does since
-- migration 000013.
--
-- The cost: a claim or a finish of a grouped or scheduled task now moves its
-- entry in that index too, since the state is part of it; the index count per
-- task stays the same. On a large table each build reads it once; readers
-- of the WAL go on reading meanwhile.
CREATE INDEX readpast_tasks_group_state ON readpast_tasks (group_name, state, id) WHERE group_name IS NOT NULL;
CREATE INDEX readpast_tasks_schedule_state ON readpast_tasks (schedule_name, state, id) WHERE schedule_name IS NOT NULL;
DROP INDEX readpast_tasks_group;
DROP INDEX readpast_tasks_schedule;
