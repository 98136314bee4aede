-- A schedule may fan out (docs/SCHEDULES.md, "Fan-out"): each fire creates
-- one task per target its selectors match (names and tag:NAME, kept
-- space-separated), at most fanout_limit of them running at once (0: all).
ALTER TABLE readpast_schedules ADD COLUMN targets TEXT NOT NULL DEFAULT '';
ALTER TABLE readpast_schedules ADD COLUMN fanout_limit INTEGER NOT NULL DEFAULT 0;
