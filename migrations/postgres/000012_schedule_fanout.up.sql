-- A schedule may fan out (docs/SCHEDULES.md, "Fan-out"): each fire creates
-- one task per target its selectors match (names and tag:NAME, kept
-- space-separated), at most fanout_limit of them running at once (0: all).
-- Columns with a constant default: no row is rewritten.
ALTER TABLE readpast_schedules ADD COLUMN targets text NOT NULL DEFAULT '';
ALTER TABLE readpast_schedules ADD COLUMN fanout_limit integer NOT NULL DEFAULT 0;
